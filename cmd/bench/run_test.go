package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// TestPathsRenamed: -paths, bench's old name of -path, still works with a
// note, and its refusal names -path.
func TestPathsRenamed(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run([]string{"-paths", "native"}, &out, &errOut)
	if err == nil || !strings.HasPrefix(err.Error(), `-path "native": want`) || errOut.String() != "note: -paths is now called -path (the old name still works)\n" {
		t.Errorf("-paths native: %v, stderr %q", err, errOut.String())
	}
}

// TestFlagErrors: bad flags and values are refused before anything runs.
func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-configs", "L"},
		{"-reps", "0"},
		{"-rounds", "0"},
		{"-steps", "-1"},
		{"-threads", "0"},
		{"-threads", "2/x"},
		{"-nosuchflag"},
		{"extra"},
		{"-worker", "XL"},
		{"-path", "native"},
		{"-path", "fused,"},
		{"-worker", "S"}, // two paths for one worker
		{"-decode", "-decode-config", "gpt3"},
		{"-decode-config", "gpt2"}, // without -decode
		{"-decode", "-decode-config", "gpt2", "-llama2c", "."},  // run.c times the llama setting only
		{"-decode", "-decode-config", "llama", "-llama2c", "."}, // no run.c here
	} {
		var out, errOut bytes.Buffer
		if err := run(args, &out, &errOut); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}

// TestHelp: -h prints the usage with a description of the configs and the
// quick form, and succeeds (it used to exit 1 with "flag: help
// requested"); a bad flag is one line, no usage.
func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"-h"}, &out, &errOut); err != nil {
		t.Fatalf("-h: %v", err)
	}
	for _, want := range []string{"usage: bench", "side by side in Go and in PyTorch", "S and M, one attention-only layer", "-go-only -configs S -rounds 1 -reps 1 is a quick look", "\n  -path string\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-h printed no %q in %q", want, out.String())
		}
	}
	out.Reset()
	err := run([]string{"-nosuchflag"}, &out, &errOut)
	if err == nil || strings.Contains(err.Error(), "\n") || out.Len()+errOut.Len() > 0 {
		t.Errorf("bad flag: %v, printed %q %q", err, out.String(), errOut.String())
	}
}

// TestParseThreads: "N" sets torch and OpenBLAS threads alike, "N/B" apart.
func TestParseThreads(t *testing.T) {
	for in, want := range map[string]torchThreads{"1": {1, 1}, "2": {2, 2}, "2/1": {2, 1}, "1/2": {1, 2}} {
		got, err := parseThreads(in)
		if err != nil || got != want {
			t.Errorf("parseThreads(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got := (torchThreads{2, 1}).String(); got != "2t/1b" {
		t.Errorf("String() = %q", got)
	}
}

// TestStepFLOPs pins the nominal work of a step against the counts written
// out by hand (N = B*T): forward QKV 2*N*D*3D + out 2*N*D*D + LM head
// 2*N*D*V + q k^T and a v 2*B*T*T*D each; a step is 3 forwards.
func TestStepFLOPs(t *testing.T) {
	s, _ := sizeNamed("S") // N 384, D 32: 2*384*32*(96+32+64) = 4718592; 4*32*144*32 = 589824
	if got, want := s.stepFLOPs(), 3.0*(4718592+589824); got != want {
		t.Errorf("S: %v FLOP, want %v", got, want)
	}
	m, _ := sizeNamed("M") // N 4096, D 128: 2*4096*128*(384+128+64) = 603979776; 4*64*4096*128 = 134217728
	if got, want := m.stepFLOPs(), 3.0*(603979776+134217728); got != want {
		t.Errorf("M: %v FLOP, want %v", got, want)
	}
	// Full blocks add the MLP's two products, 2*N*D*F each, per layer.
	// sort, N 512, D 64, F 256, per layer: 2*512*64*(192+64+512) = 50331648,
	// attention 4*32*16*16*64 = 2097152; two layers; LM head 2*512*64*17 = 1114112.
	srt, _ := sizeNamed("sort")
	if got, want := srt.stepFLOPs(), 3.0*(2*(50331648+2097152)+1114112); got != want {
		t.Errorf("sort: %v FLOP, want %v", got, want)
	}
	// L4, N 1024, D 128, F 512, per layer: 2*1024*128*(384+128+1024) = 402653184,
	// attention 4*16*64*64*128 = 33554432; four layers; LM head 2*1024*128*64 = 16777216:
	// 5.28 GFLOP, the "about 5.2".
	l4, _ := sizeNamed("L4")
	if got, want := l4.stepFLOPs(), 3.0*(4*(402653184+33554432)+16777216); got != want {
		t.Errorf("L4: %v FLOP, want %v", got, want)
	}
	// L4-llama, G 2 kv heads of d 16 (QKV 128 + 2*2*16 = 192 wide), F 352 in
	// three matrices, per layer: 2*1024*128*(192+128+3*352) = 360710144; the
	// rest as L4.
	llama, _ := sizeNamed("L4-llama")
	if got, want := llama.stepFLOPs(), 3.0*(4*(360710144+33554432)+16777216); got != want {
		t.Errorf("L4-llama: %v FLOP, want %v", got, want)
	}
	if cfg := llama.modelConfig(layers.Fused); llama.DFF != cfg.DefaultDFF() {
		t.Errorf("L4-llama: d_ff %d, want SwiGLU's default %d (2/3 of 4D, rounded as Llama)", llama.DFF, cfg.DefaultDFF())
	}
}

// TestSizesMatchTorchRef: every Go size both sides run has the same numbers
// in torch_ref.py's CONFIGS and DEFAULT_STEPS, so the two sides time one
// model; each attention-family variant has its base's sizes.
func TestSizesMatchTorchRef(t *testing.T) {
	src, err := os.ReadFile("torch_ref.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sizes {
		if !s.onTorch() {
			base, err := sizeNamed(s.Base)
			same := err == nil && base.Batch == s.Batch && base.SeqLen == s.SeqLen && base.DModel == s.DModel &&
				base.Heads == s.Heads && base.V == s.V && base.Layers == s.Layers && base.DFF == s.DFF && base.Steps == s.Steps
			if !same || s.modelConfig(layers.Fused).Validate() != nil {
				t.Errorf("%s: not a valid variant of %s's sizes", s.Name, s.Base)
			}
			continue
		}
		llama := ""
		if s.Llama {
			llama = fmt.Sprintf(`, block="llama", kv_heads=%d`, s.KVHeads)
		}
		if s.NanoGPT {
			llama = ", tie=True"
		}
		cfg := fmt.Sprintf(`%q: dict(batch=%d, seq_len=%d, d_model=%d, heads=%d, vocab=%d, layers=%d, d_ff=%d%s)`,
			s.Name, s.Batch, s.SeqLen, s.DModel, s.Heads, s.V, s.Layers, s.DFF, llama)
		steps := fmt.Sprintf(`%q: %d`, s.Name, s.Steps)
		for _, want := range []string{cfg, steps} {
			if !strings.Contains(string(src), want) {
				t.Errorf("torch_ref.py lacks %s", want)
			}
		}
	}
}

func TestMedian(t *testing.T) {
	if got := median([]float64{5, 1, 3}); got != 3 {
		t.Errorf("median of 5 1 3 = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of 4 1 3 2 = %v", got)
	}
}

// TestChooseCoretype: "none" leaves OpenBLAS to detect, an explicit name is
// passed through, and auto respects OPENBLAS_CORETYPE from the environment.
func TestChooseCoretype(t *testing.T) {
	if got := chooseCoretype("none"); got != "" {
		t.Errorf("none gave %q", got)
	}
	if got := chooseCoretype("Haswell"); got != "Haswell" {
		t.Errorf("Haswell gave %q", got)
	}
	t.Setenv("OPENBLAS_CORETYPE", "Zen")
	if got := chooseCoretype("auto"); got != "Zen" {
		t.Errorf("auto with OPENBLAS_CORETYPE=Zen gave %q", got)
	}
}

// TestPrintTable: one line per config with the ratio against the best
// PyTorch setting, GFLOP/s from the step's FLOP count and the fraction of
// the peak, plus a note when PyTorch did not get the CPUs it asked for.
func TestPrintTable(t *testing.T) {
	s, _ := sizeNamed("S")
	two := torchThreads{2, 2}
	torch := map[torchThreads]*measurement{{1, 1}: {rates: []float64{400}, cpuWall: 1}, two: {rates: []float64{200}, cpuWall: 1.1}}
	r := &row{size: s, path: layers.Fused, takeTorch: true, torch: torch,
		goRes: measurement{rates: []float64{700, 800, 900}, peakRSS: 30 << 20, bytes: 2048, allocs: 12, cpuWall: 1}}
	gr := &row{size: s, path: layers.Gorgonia, torch: torch,
		goRes: measurement{rates: []float64{100}, peakRSS: 40 << 20, bytes: 1 << 20, allocs: 900, cpuWall: 1}}
	var out bytes.Buffer
	printTable(&out, []*row{r, gr}, options{threads: []torchThreads{{1, 1}, two}}, 100)
	text := out.String()
	// the gorgonia row: 100 steps/s against the same PyTorch best, 0.25x
	for _, want := range []string{"S gorgonia  100.0", "0.25x", "900 (1.0 MiB)"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "PyTorch 2t got"); n != 1 {
		t.Errorf("the PyTorch CPU note appears %d times, want once per config:\n%s", n, text)
	}
	// 800 steps/s * 15.925248 MFLOP = 12.7 GFLOP/s, 12.7% of a 100 GFLOP/s peak
	for _, want := range []string{"S fused", "800.0", "400.0 (400.0 / 200.0)", "2.00x", "12.7  ", "12.7%", "12 (2.0 KiB)", "30.0 MiB", "PyTorch 2t got 1.10 CPUs of 2"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
}

// TestSortIsTheSortConfig: the sort size is configs/sort.yaml's model and
// batch, so its figure is the step the README's sort timing runs.
// TestFineTuneNote: a NanoGPT size's line gives tokens/s (steps/s times
// Batch·SeqLen) on both sides, the ratio of the peaks and the memory
// estimate against Go's peak.
func TestFineTuneNote(t *testing.T) {
	s, err := sizeNamed("gpt2")
	if err != nil {
		t.Fatal(err)
	}
	est := s.modelConfig(layers.Fused).TrainMemory(s.Batch, 0, int(s.moments().Size()))
	peak := int64(est.Total() / 1.1) // the estimate 10% above the peak
	r := &row{size: s, path: layers.Fused, goRes: measurement{rates: []float64{1.5}, peakRSS: peak}}
	got := fineTuneNote(r, 0.5, peak/2)
	want := "gpt2 fused: tokens/s Go 384.0, PyTorch 128.0; peak RSS 2.00x PyTorch's; estimate " + est.String() + ", +10% of Go's peak"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestSortIsTheSortConfig(t *testing.T) {
	cfg, err := rundir.LoadConfig("../../configs/sort.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sizeNamed("sort")
	if got := s.modelConfig(layers.Fused); got != cfg.Model {
		t.Errorf("bench sort model %+v, configs/sort.yaml %+v", got, cfg.Model)
	}
	if s.Batch != cfg.Train.BatchSize {
		t.Errorf("bench sort batch %d, configs/sort.yaml %d", s.Batch, cfg.Train.BatchSize)
	}
}

// TestPrintDecode: medians, the cache's speed-up and the ratio against
// PyTorch's better thread count; with a bandwidth limit (gpt2's setting,
// no run without the cache) the limit and Go's share of it instead of the
// columns without the cache.
func TestPrintDecode(t *testing.T) {
	sort, _ := decodeSettingNamed("sort")
	rows := []*decodeRow{
		{batch: 1, length: 64, cached: []float64{900, 1000, 1100}, none: []float64{100, 250}, torch: map[int][]float64{1: {400}, 2: {500, 600, 200}}},
		{batch: 32, length: 256, cached: []float64{5000}, none: []float64{50}, torch: map[int][]float64{}},
	}
	var out bytes.Buffer
	printDecode(&out, rows, sort, options{rounds: 1, reps: 3}, 0)
	text := out.String()
	for _, want := range []string{"1000", "175", "5.7x", "500 (2)", "2.00x", "100.0x", "prompt 8"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "32" && (len(f) != 7 || f[5] != "-" || f[6] != "-") {
			t.Errorf("the row without PyTorch: %q", line)
		}
	}
	gpt2, _ := decodeSettingNamed("gpt2")
	out.Reset()
	printDecode(&out, []*decodeRow{{batch: 1, length: 64, cached: []float64{40, 42, 44}, torch: map[int][]float64{1: {10}, 2: {12}}}}, gpt2, options{rounds: 1, reps: 3}, 56)
	text = out.String()
	for _, want := range []string{"bandwidth limit", "Go/limit", "42.0", "12.0 (2)", "3.50x", "56.0", "0.75", "prompt 1"} {
		if !strings.Contains(text, want) {
			t.Errorf("gpt2 table lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "no cache") || strings.Contains(text, "run.c") {
		t.Errorf("gpt2 table has a column without the cache or run.c's:\n%s", text)
	}
	llama, _ := decodeSettingNamed("llama")
	for _, runc := range [][]float64{{20, 30, 25}, nil} {
		out.Reset()
		printDecode(&out, []*decodeRow{{batch: 1, length: 64, cached: []float64{50}, torch: map[int][]float64{1: {10}}, runc: runc, runcThreads: 2}}, llama, options{rounds: 1, reps: 3}, 60)
		text = out.String()
		for _, w := range []string{"run.c (threads)", "Go/run.c", "5.00x", "60.0", "0.83"} {
			if !strings.Contains(text, w) {
				t.Errorf("llama table (run.c %v) lacks %q:\n%s", runc, w, text)
			}
		}
		// B, to, Go, PyTorch (threads), ratio, run.c (threads), ratio, limit, share
		want := []string{"25.0", "(2)", "2.00x"}
		if runc == nil {
			want = []string{"-", "-"}
		}
		if row := strings.Fields(strings.Split(text, "\n")[2]); len(row) < 6+len(want) || !slices.Equal(row[6:6+len(want)], want) {
			t.Errorf("llama row (run.c %v): %q, want run.c's columns %q", runc, row, want)
		}
	}
}

// TestDecodeSettingsMatchTorchDecode: each -decode-config's model timed
// against PyTorch has the sizes of torch_decode.py's CONFIGS entry of the
// same name, so the two
// sides time one model; sort's is configs/sort.yaml's model and gpt2's is
// GPT-2 small's 124,439,808 weights.
func TestDecodeSettingsMatchTorchDecode(t *testing.T) {
	src, err := os.ReadFile("torch_decode.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range decodeSettings {
		if s.hf != nil {
			continue // a Hugging Face directory, timed in Go alone (runMapped)
		}
		if want := fmt.Sprintf("%q: %s", s.name, torchDecodeConfig(s)); !strings.Contains(string(src), want) {
			t.Errorf("torch_decode.py lacks %s", want)
		}
		if err := s.config(64).Validate(); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
	}
	sort, _ := decodeSettingNamed("sort")
	size, _ := sizeNamed("sort")
	c, want := sort.config(64), size.modelConfig(layers.Fused)
	want.Context, want.Attention = 64, "" // the default path, fused
	if c != want {
		t.Errorf("sort decode model %+v, sort size %+v", c, want)
	}
	gpt2, _ := decodeSettingNamed("gpt2")
	n := 0
	for _, spec := range gpt2.config(64).ParamSpecs() {
		size := 1
		for _, d := range spec.Shape {
			size *= d
		}
		n += size
	}
	if n != 124_439_808 {
		t.Errorf("gpt2 decode model: %d weights, want GPT-2 small's 124,439,808", n)
	}
}

// TestStepWeightBytes: a decoding step reads every weight once but one row
// of each embedding table, unless the token table is also the LM head.
func TestStepWeightBytes(t *testing.T) {
	// V 10, T 6, D 4, one attention-only layer: qkv 48, out 16 + 4 biases.
	cfg := model.Config{Vocab: 10, Context: 6, DModel: 4, Heads: 2, Layers: 1, OutBias: true}
	for _, tied := range []bool{false, true} {
		cfg.TieEmbeddings = tied
		m, err := model.New(cfg, tensor.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		// untied: token row 4 + position row 4 + block 68 + head 40; tied: the
		// token table whole (40, as the head) + position row 4 + block 68.
		want := map[bool]float64{false: 4 * (4 + 4 + 68 + 40), true: 4 * (40 + 4 + 68)}[tied]
		if got := stepWeightBytes(m); got != want {
			t.Errorf("tied %t: %v bytes, want %v", tied, got, want)
		}
	}
}
