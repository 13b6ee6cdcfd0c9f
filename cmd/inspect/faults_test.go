package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/internal/safetensors/sttest"
	"github.com/attnscope/attnscope/model"
)

// refused runs the command with args and requires what the issue asks of
// every bad input: an error (main exits 1) on one line containing each of
// want, nothing on stdout or stderr, and no -png file written.
func refused(t *testing.T, name string, args []string, want ...string) {
	t.Helper()
	png := filepath.Join(t.TempDir(), "never.png")
	var stdout, stderr bytes.Buffer
	if !msgtest.Refusal(t, name, run(append(args, "-png", png), &stdout, &stderr), want...) {
		return
	}
	if stdout.Len() > 0 || stderr.Len() > 0 {
		t.Errorf("%s: stdout %q, stderr %q, want both empty", name, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(png); !os.IsNotExist(err) {
		t.Errorf("%s: a refused run wrote %s (%v)", name, png, err)
	}
}

// TestCorruptCheckpoints: -checkpoint with every kind of broken file the
// issue lists is refused through run() with one line naming the file and the
// problem, nothing printed, nothing written, and the file left as it was.
func TestCorruptCheckpoints(t *testing.T) {
	good, err := os.ReadFile(testCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	headerLen := int(binary.LittleEndian.Uint64(good))
	_, section := sttest.Split(t, good)
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "file is 0 bytes, too short for the 8-byte header length"},
		{"truncated in the length", good[:5], "file is 5 bytes, too short"},
		{"truncated in the header", good[:8+headerLen/2], "exceeds the"},
		{"truncated after the header", good[:8+headerLen], "run past the end of the 0-byte data section (truncated file?)"},
		{"truncated by one byte", good[:len(good)-1], "truncated file?"},
		{"header length beyond the file", append(binary.LittleEndian.AppendUint64(nil, uint64(len(good))), good[8:]...),
			fmt.Sprintf("header length %d exceeds the %d bytes after the length prefix", len(good), len(good)-8)},
		{"header length absurd", append(binary.LittleEndian.AppendUint64(nil, 1<<62), good[8:]...), "exceeds the 100000000-byte limit"},
		{"header not JSON", append(binary.LittleEndian.AppendUint64(nil, uint64(headerLen)), append(bytes.Repeat([]byte("{oops!} "), headerLen/8), section...)...),
			"header: invalid JSON: invalid character"},
		{"header a JSON list", sttest.Join(t, []int{1, 2}, section), "header does not start with '{'"},
		{"not a safetensors file", []byte("seed: 1\ntask: {name: copy}\n"), "is a text file, not a checkpoint"},
		{"overlapping offsets", sttest.ShiftOffsets(t, good, "pos_emb.weight", -4), `tensor "pos_emb.weight": data_offsets [572 1084] overlap tensor "tok_emb.weight" [0 576]`},
		{"offsets past the data", sttest.ShiftOffsets(t, good, "lm_head.weight", 4), `tensor "lm_head.weight": data_offsets`},
		{"negative offsets", sttest.EditHeader(t, good, func(h map[string]any) {
			sttest.Entry(h, "tok_emb.weight")["data_offsets"] = []float64{-576, 0}
		}), `tensor "tok_emb.weight": data_offsets [-576 0] are not a range`},
		{"unknown dtype", sttest.EditHeader(t, good, func(h map[string]any) { sttest.Entry(h, "blocks.1.attn.out.bias")["dtype"] = "F33" }),
			`tensor "blocks.1.attn.out.bias": unknown dtype "F33"`},
		{"integer dtype", sttest.EditHeader(t, good, func(h map[string]any) { sttest.Entry(h, "blocks.1.attn.out.bias")["dtype"] = "I32" }),
			`tensor "blocks.1.attn.out.bias" has dtype I32, want F32 or F64`},
		{"shape disagrees with the config", sttest.EditHeader(t, good, func(h map[string]any) { sttest.Entry(h, "tok_emb.weight")["shape"] = []int{16, 9} }),
			`tensor "tok_emb.weight" has shape [16 9], want [9 16] (dim 0 is model.vocab=9)`},
		{"config disagrees with the shapes", sttest.EditConfig(t, good, func(run map[string]any) { run["model"].(map[string]any)["d_model"] = 32 }),
			`tensor "tok_emb.weight" has shape [9 16], want [9 32] (dim 1 is model.d_model=32)`},
		{"config of another task", sttest.EditConfig(t, good, func(run map[string]any) {
			run["task"] = map[string]any{"name": "repeat", "length": 8, "symbols": 8}
		}), "metadata config: model.vocab = 9 does not match the vocabulary of task repeat (8)"},
		{"NaN weight", sttest.SetElement(t, good, "blocks.0.attn.qkv.weight", 17, safetensors.EncodeFloat32([]float32{float32(math.NaN())})),
			`tensor "blocks.0.attn.qkv.weight": value NaN at index [1 1] (flat 17) is not finite`},
		{"+Inf weight", sttest.SetElement(t, good, "lm_head.weight", 0, safetensors.EncodeFloat32([]float32{float32(math.Inf(1))})), `tensor "lm_head.weight": value +Inf at index [0 0]`},
		{"-Inf weight", sttest.SetElement(t, good, "pos_emb.weight", 127, safetensors.EncodeFloat32([]float32{float32(math.Inf(-1))})), `tensor "pos_emb.weight": value -Inf at index [7 15]`},
		{"config nested a million deep", sttest.EditHeader(t, good, func(h map[string]any) {
			h["__metadata__"].(map[string]any)["config"] = strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000)
		}), "metadata config: the run config is 2000000 bytes, more than the 1048576 a run config may take"},
		{"config nested 100,000 deep", sttest.EditHeader(t, good, func(h map[string]any) {
			h["__metadata__"].(map[string]any)["config"] = strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
		}), "metadata config: run config: the config nests deeper than 8 levels"},
		{"no attnscope metadata", sttest.EditHeader(t, good, func(h map[string]any) { delete(h, "__metadata__") }), `no "format" metadata: not an attnscope checkpoint`},
	}
	dir := t.TempDir()
	for _, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".safetensors")
		if err := os.WriteFile(path, c.file, 0o644); err != nil {
			t.Fatal(err)
		}
		refused(t, c.name, []string{"-checkpoint", path, "-json"}, "checkpoint "+path+": ", c.want)
		if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, c.file) {
			t.Errorf("%s: the file changed (%v)", c.name, err)
		}
	}
	hugeMismatch(t, good, dir)
	hugeSet := filepath.Join(dir, "huge-eval-set.safetensors")
	if err := os.WriteFile(hugeSet, sttest.EditConfig(t, good, func(run map[string]any) {
		run["train"].(map[string]any)["eval_size"] = 1e9
	}), 0o644); err != nil {
		t.Fatal(err)
	}
	refused(t, "-ablate of an edited eval_size", []string{"-checkpoint", hugeSet, "-ablate"},
		"-ablate: the run's held-out set (train.eval_size = 1000000000 rows of 8 positions) needs an estimated 178.8 GiB (limit 8.0 GiB)")
	missing := filepath.Join(dir, "missing.safetensors")
	refused(t, "missing file", []string{"-checkpoint", missing}, "checkpoint "+missing+": no such file; train first", "-checkpoint testdata/induction/checkpoint.safetensors")
	refused(t, "a directory", []string{"-checkpoint", dir}, "checkpoint "+dir+": is a directory")
	refused(t, "/dev/zero", []string{"-checkpoint", "/dev/zero"}, "checkpoint /dev/zero: is a character device, not a regular file")
	pipe := filepath.Join(dir, "pipe.safetensors")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	refused(t, "a named pipe", []string{"-checkpoint", pipe}, "checkpoint "+pipe+": is a named pipe, not a regular file")
}

// hugeMismatch: a sparse 3.5 GiB checkpoint whose tok_emb.weight has 56 Mi
// rows where its config wants 9 is refused from its header, naming the shape,
// without reading the tensor data (issue 11: it was read in full first, 23 s
// and 3.6 GB, and died of a fatal out-of-memory under a 4 GiB ulimit). The
// proof it was not read: the command allocates far less than the file holds.
func hugeMismatch(t *testing.T, good []byte, dir string) {
	t.Helper()
	const rows = 56 << 20 // of 16 float32s: 3.5 GiB
	var grow float64
	file := sttest.EditHeader(t, good, func(h map[string]any) {
		begin, end := sttest.Offsets(h, "tok_emb.weight")
		grow = rows*64 - (end - begin)
		for name := range h {
			if name == "__metadata__" {
				continue
			}
			if b, e := sttest.Offsets(h, name); b >= end {
				sttest.Entry(h, name)["data_offsets"] = []float64{b + grow, e + grow}
			}
		}
		sttest.Entry(h, "tok_emb.weight")["shape"] = []int{rows, 16}
		sttest.Entry(h, "tok_emb.weight")["data_offsets"] = []float64{begin, begin + rows*64}
	})
	path := filepath.Join(dir, "huge.safetensors")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	size := int64(len(file)) + int64(grow)
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	refused(t, "huge file of the wrong shape", []string{"-checkpoint", path, "-json"}, "checkpoint "+path+": ",
		fmt.Sprintf(`tensor "tok_emb.weight" has shape [%d 16], want [9 16] (dim 0 is model.vocab=9)`, rows))
	runtime.ReadMemStats(&after)
	if read := after.TotalAlloc - before.TotalAlloc; read > 64<<20 {
		t.Errorf("refusing a %d-byte file from its header allocated %d bytes: its data was read", size, read)
	}
	if info, err := os.Stat(path); err != nil || info.Size() != size {
		t.Errorf("the file changed: %v", err)
	}
}

// TestNonFiniteActivations: a checkpoint of finite but huge weights (3e38)
// whose forward pass overflows is refused in every output mode (text, -json,
// -png, -html) naming the layer and head where the first NaN appears and the
// weight behind it, and writes no file (issue 11: the text view exited 0
// showing NaN and blank heatmaps, -json failed on "unsupported value: NaN").
func TestNonFiniteActivations(t *testing.T) {
	file, err := os.ReadFile(testCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := sttest.Split(t, file)
	begin, end := sttest.Offsets(h, "blocks.0.attn.qkv.weight")
	for i := range int(end-begin) / 4 {
		file = sttest.SetElement(t, file, "blocks.0.attn.qkv.weight", i, safetensors.EncodeFloat32([]float32{3e38}))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "huge.safetensors")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	want := "checkpoint " + path + ": non-finite activations: layer 0 head 0: attention weight (query 0, key 0) of example 0 is NaN; " +
		"the forward pass overflows float32 (largest |weight| 3e+38, in blocks.0.attn.qkv.weight)"
	png, page := filepath.Join(dir, "out.png"), filepath.Join(dir, "out.html")
	for _, mode := range [][]string{nil, {"-json"}, {"-png", png}, {"-html", page}, {"-mean"}} {
		refused(t, fmt.Sprintf("mode %q", mode), append([]string{"-checkpoint", path}, mode...), want)
	}
	for _, out := range []string{png, page} {
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s was written: %v", out, err)
		}
	}
}

// TestPNGNeverOverwrites: -png refuses the checkpoint being inspected, the
// files of its run and of any run, and an existing path that is not a regular
// file (a named pipe, a symlink), before doing any work, and leaves each as
// it was.
func TestPNGNeverOverwrites(t *testing.T) {
	good, err := os.ReadFile(testCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	runDir := t.TempDir()
	ckpt := filepath.Join(runDir, "checkpoint.safetensors")
	files := map[string][]byte{"checkpoint.safetensors": good, "best.safetensors": good, "state-5.safetensors": good, "config.yaml": []byte("seed: 1\n"), "metrics.jsonl": []byte("{\"step\":1}\n")}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(runDir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	other := t.TempDir()
	pipe := filepath.Join(other, "heads.png")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(other, "link.png")
	if err := os.Symlink(filepath.Join(runDir, "best.safetensors"), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, png, want string }{
		{"the checkpoint itself", ckpt, "it is the input " + ckpt},
		{"the checkpoint by another name", filepath.Join(runDir, ".", "..", filepath.Base(runDir), "checkpoint.safetensors"), "it is the input " + ckpt},
		{"the run's best weights", filepath.Join(runDir, "best.safetensors"), "best.safetensors is a file of a training run"},
		{"the run's config", filepath.Join(runDir, "config.yaml"), "config.yaml is a file of a training run"},
		{"the run's metrics (an input of -html)", filepath.Join(runDir, "metrics.jsonl"), "it is the input " + filepath.Join(runDir, "metrics.jsonl")},
		{"a run's state", filepath.Join(runDir, "state-5.safetensors"), "state-5.safetensors is a file of a training run"},
		{"a named pipe", pipe, "it is a named pipe, not a regular file"},
		{"a symlink", link, "it is a symlink, not a regular file"},
		// issue 11: as root, -png /dev/full replaced the device node.
		{"a device", "/dev/full", "it is a character device, not a regular file"},
	} {
		if _, err := os.Lstat(c.png); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var stdout, stderr bytes.Buffer
		err := run([]string{"-checkpoint", ckpt, "-png", c.png}, &stdout, &stderr)
		if want := "-png: refusing to write " + c.png + ": " + c.want; err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", c.name, err, want)
		}
		if stdout.Len() > 0 {
			t.Errorf("%s: wrote %q to stdout before refusing", c.name, stdout.String())
		}
	}
	for name, content := range files {
		if got, err := os.ReadFile(filepath.Join(runDir, name)); err != nil || !bytes.Equal(got, content) {
			t.Errorf("%s changed (%v)", name, err)
		}
	}
	for _, p := range []string{pipe, link, "/dev/full"} {
		if info, err := os.Lstat(p); err != nil || info.Mode().IsRegular() {
			t.Errorf("%s was replaced by a regular file (%v)", p, err)
		}
	}
}

// TestTruncatedAnywhere: the test checkpoint cut anywhere is refused with one
// line naming the file, so a half-written file is never displayed. Every cut
// inside the length prefix and the header is tried; in the data section,
// each tensor's first and last byte and every 53rd byte (parsing the header
// makes those cuts the slow ones).
func TestTruncatedAnywhere(t *testing.T) {
	good, err := os.ReadFile(testCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	h, section := sttest.Split(t, good)
	start := len(good) - len(section)
	var cuts []int
	for n := 0; n <= start; n++ {
		cuts = append(cuts, n)
	}
	for n := start + 1; n < len(good); n += 53 {
		cuts = append(cuts, n)
	}
	for name := range h {
		if name != "__metadata__" {
			b, e := sttest.Offsets(h, name)
			cuts = append(cuts, start+int(b)+1, start+int(e)-1)
		}
	}
	path := filepath.Join(t.TempDir(), "cut.safetensors")
	for _, n := range cuts {
		if err := os.WriteFile(path, good[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		err := run([]string{"-checkpoint", path}, &stdout, &stderr)
		if err == nil || !strings.HasPrefix(err.Error(), "checkpoint "+path+": ") || strings.Contains(err.Error(), "\n") || stdout.Len()+stderr.Len() > 0 {
			t.Fatalf("cut at %d of %d bytes: error %v, stdout %d bytes, stderr %q", n, len(good), err, stdout.Len(), stderr.String())
		}
	}
}

// TestBadTokens: -tokens that are not numbers, ids outside the vocabulary
// [0, 9) of the test checkpoint, and more tokens than its context of 8 are
// refused, naming the token and its position; a huge bad token is quoted
// short.
func TestBadTokens(t *testing.T) {
	huge := strings.Repeat("7", 5000) + "x"
	for _, c := range []struct {
		tokens string
		want   []string
	}{
		{"3 1 four", []string{`-tokens: "four" (token 2) is not a number`}},
		{"3,1.5", []string{`-tokens: "1.5" (token 1) is not a number`}},
		{"0x3", []string{`"0x3" (token 0) is not a number`}},
		{"1e3", []string{`"1e3" (token 0) is not a number`}},
		{"3;4", []string{`"3;4" (token 0) is not a number`}},
		{"٣", []string{`"٣" (token 0) is not a number`}},
		{"5 \x00", []string{`"\x00" (token 1) is not a number`}},
		{huge, []string{`-tokens: "` + huge[:80] + `"... (5001 bytes) (token 0) is not a number`}},
		{"99999999999999999999", []string{`-tokens: "99999999999999999999" (token 0) is too large to be a token id`}},
		{" , \t", []string{`-tokens " , \t": no token ids`}},
		{"3 1 -1", []string{"-tokens: token -1 at position 2 is outside the vocabulary [0, 9)"}},
		{"9", []string{"-tokens: token 9 at position 0 is outside the vocabulary [0, 9)"}},
		{"1 2 3 4 5 6 7 0 1", []string{"-tokens: 9 tokens is longer than the model's context of 8"}},
		{strings.Repeat("1 ", 100000), []string{"-tokens: 100000 tokens is longer than the model's context of 8"}},
	} {
		refused(t, fmt.Sprintf("-tokens %.30q", c.tokens), []string{"-checkpoint", testCheckpoint, "-tokens", c.tokens}, c.want...)
	}
}

// TestBeyondMemory: a flag that would take more memory than model.MaxMemory
// is refused on one line naming it and the estimate, before anything is
// built: -tokens on a model without a learned position table, which
// nothing else bounds (20,000 once ended in a fatal out-of-memory);
// -examples, whose 4096 scoring sequences of a model of the longest copy
// task (T = 1024) would need hundreds of GiB though the model fits in
// training memory; -ablate, whose ablation graph (train's evaluation chunks,
// 8 rows of 1024 positions, with 4 layers of 16 heads' attention maps)
// would not fit though the held-out set does.
func TestBeyondMemory(t *testing.T) {
	rope := newCheckpoint(t, model.Config{Vocab: 9, Context: 16, DModel: 16, Heads: 2, Layers: 2, OutBias: true, Position: model.PositionRope},
		data.TaskConfig{Name: "copy", Length: 8, Symbols: 8})
	long := newCheckpoint(t, model.Config{Vocab: 9, Context: 1024, DModel: 16, Heads: 2, Layers: 2, OutBias: true},
		data.TaskConfig{Name: "copy", Length: 512, Symbols: 8})
	manyHeads := newCheckpoint(t, model.Config{Vocab: 9, Context: 1024, DModel: 16, Heads: 16, Layers: 4, OutBias: true},
		data.TaskConfig{Name: "copy", Length: 512, Symbols: 8})
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-checkpoint", rope, "-tokens", strings.Repeat("1 ", 20000)}, []string{
			"-tokens: inspecting 20000 tokens (attention maps of 2 layers x 2 heads x 20000 x 20000 positions) needs an estimated ", "GiB (limit 8.0 GiB); give fewer tokens"}},
		{[]string{"-checkpoint", long, "-examples", "4096"}, []string{
			"-examples 4096: scoring the heads of this model (2 layers of 2 heads) on examples of 1024 tokens needs an estimated ", "GiB (limit 8.0 GiB); use a smaller -examples"}},
		{[]string{"-checkpoint", manyHeads, "-ablate", "-examples", "1"}, []string{
			"-ablate: scoring the held-out set of 1000 rows in chunks of 8 needs an estimated", "GiB (limit 8.0 GiB)"}},
	} {
		refused(t, c.args[2]+" beyond memory", c.args, c.want...)
	}
}

// TestTrainingOnlyValuesDoNotMatter: a checkpoint whose train section
// training would refuse (a zero batch, a negative eval_size) opens: inspect
// reads only what the model's forward needs.
func TestTrainingOnlyValuesDoNotMatter(t *testing.T) {
	good, err := os.ReadFile(testCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "odd.safetensors")
	odd := sttest.EditConfig(t, good, func(run map[string]any) {
		run["train"].(map[string]any)["batch_size"] = 0
		run["train"].(map[string]any)["eval_size"] = -5
	})
	if err := os.WriteFile(path, odd, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-checkpoint", path, "-summary"}, &stdout, &stderr); err != nil || !strings.Contains(stdout.String(), "layer head") {
		t.Errorf("a checkpoint with training-only values out of range: %v\n%s", err, stdout.String())
	}
}

// TestBadFlags: a bad flag or flag value is one line, with no usage dump on
// stderr (main prints the line); -examples is bounded by count (and by
// memory: TestBeyondMemory).
func TestBadFlags(t *testing.T) {
	ck := []string{"-checkpoint", testCheckpoint}
	refused(t, "unknown flag", []string{"-bogus"}, "bad flags (see -h): flag provided but not defined: -bogus")
	refused(t, "bad -examples", append(ck, "-examples", "many"), `bad flags (see -h): invalid value "many" for flag -examples`)
	refused(t, "bad -seed", append(ck, "-seed", "-1"), `invalid value "-1" for flag -seed`)
	refused(t, "-examples too many", append(ck, "-examples", "100000"), "-examples 100000: must be in [1, 4096]")

	// A long value is quoted to 80 bytes and its length (issue 11: messages
	// echoed whole values, 100 KB and more).
	huge := strings.Repeat("z", 100_000)
	short := `"` + huge[:80] + `"... (100000 bytes)`
	for _, c := range []struct{ flag, want string }{
		{"-color", "-color " + short + ": want auto, always or never"},
		{"-path", "-path " + short + ": want fused or gorgonia"},
		{"-ablation", "-ablation: ablation mode " + short + ": want zero or mean"},
		{"-seed", "bad flags (see -h): invalid value " + short + " for flag -seed: parse error"},
	} {
		refused(t, "long "+c.flag, append(ck, c.flag, huge), c.want)
	}
	refused(t, "long unknown flag", []string{"-" + huge}, "bad flags (see -h): flag provided but not defined: -"+huge[:79]+"... (100001 bytes)")
	refused(t, "long argument", append(ck, testCheckpoint, huge), "unexpected argument "+short+` (one model, already given as "`+testCheckpoint+`"; see -h)`)
	refused(t, "long model argument", append(ck, huge), "-checkpoint \""+testCheckpoint+"\" and the argument "+short+" name different paths; give one")
}

// TestEditHeaderKeepsValidFile: editHeader with no edit gives a checkpoint
// that loads, so each corrupt file above is refused for its one edit, not for
// the re-encoding.
func TestEditHeaderKeepsValidFile(t *testing.T) {
	good, err := os.ReadFile(testCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "same.safetensors")
	if err := os.WriteFile(path, sttest.EditHeader(t, good, func(map[string]any) {}), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := safetensors.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Load(path); err != nil {
		t.Fatal(err)
	}
}
