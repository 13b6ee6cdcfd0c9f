package hf_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/hf"
)

// halfVariants are the fixtures stored in BF16 or F16: GPT-2's (whose
// embeddings are kept mapped, its Conv1D weights transposed into float32),
// Llama-shaped ones with biases (biased, qwen2), Mistral's, sharded, and
// issue 45's Qwen 3, Gemma 2 (sharded) and Gemma 3 vision model's text.
var halfVariants = []string{"biased", "buffers", "distil", "mistral", "qwen2", "sharded", "qwen3_bf16", "gemma2_bf16", "gemma3_vlm"}

// TestMappedMatchesWidened: each BF16 or F16 fixture opened with Map keeps
// its matrices in the file, and its logits on the fused path, of a full
// forward and of the KV-cache decoder at each step, are bit for bit those
// of the same fixture read into float32; widened (WidenStored), it gives
// the float32 model's logits on the Gorgonia path too.
func TestMappedMatchesWidened(t *testing.T) {
	for _, variant := range halfVariants {
		ref := readReference(t, variant)
		dir := filepath.Join("testdata", variant)
		copied := load(t, dir, hf.Options{}).Model
		m := load(t, dir, hf.Options{Map: true}).Model
		if !m.HasStored() || copied.HasStored() {
			t.Fatalf("%s: mapped HasStored %t, read HasStored %t; want true, false", variant, m.HasStored(), copied.HasStored())
		}
		copied.Config.Attention, m.Config.Attention = string(layers.Fused), string(layers.Fused)
		want := logits(t, copied, ref.Tokens)
		sameBits(t, variant+" forward", logits(t, m, ref.Tokens), want)
		wantSteps, gotSteps := decodeSteps(t, copied, ref.Tokens), decodeSteps(t, m, ref.Tokens)
		for s := range wantSteps {
			sameBits(t, fmt.Sprintf("%s decoder step %d", variant, s), gotSteps[s], wantSteps[s])
		}
		if err := m.WidenStored(); err != nil {
			t.Fatal(err)
		}
		copied.Config.Attention, m.Config.Attention = string(layers.Gorgonia), string(layers.Gorgonia)
		if m.HasStored() {
			t.Fatalf("%s: stored weights after WidenStored", variant)
		}
		sameBits(t, variant+" widened, gorgonia path", logits(t, m, ref.Tokens), logits(t, copied, ref.Tokens))
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// decodeSteps are the decoder's logits at each step of tokens, copied.
func decodeSteps(t *testing.T, m *model.Model, tokens []int) [][]float64 {
	t.Helper()
	dec, err := model.NewDecoder(m, 1, len(tokens))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var steps [][]float64
	for _, tok := range tokens {
		got, err := dec.Step([]int{tok})
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, append([]float64(nil), got...))
	}
	return steps
}

func sameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d logits, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s: logit %d is %v, read into float32 %v", what, i, got[i], want[i])
		}
	}
}

// mistralShards are the mistral fixture's weight files.
var mistralShards = []string{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"}

// TestMappedShardTruncatedIsAnError truncates a shard of a mapped model
// between two forwards: the second fails with one line naming the weight
// and the file, and the process lives on (no SIGBUS).
func TestMappedShardTruncatedIsAnError(t *testing.T) {
	dir := copyVariant(t, "mistral")
	ref := readReference(t, "mistral")
	m := load(t, dir, hf.Options{Map: true}).Model
	g, err := model.Build(m, model.BuildOptions{Batch: 1, SeqLen: len(ref.Tokens)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Feed(ref.Tokens, ref.Tokens, make([]float64, len(ref.Tokens))); err != nil {
		t.Fatal(err)
	}
	vm := g.NewMachine()
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("before the truncation: %v", err)
	}
	for _, shard := range mistralShards {
		if err := os.Truncate(filepath.Join(dir, shard), 0); err != nil {
			t.Fatal(err)
		}
	}
	vm.Reset()
	err = vm.RunAll()
	if err == nil || !strings.Contains(err.Error(), "truncated or replaced while the model had it mapped") ||
		!strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("after the truncation: %v; want one line naming the shard and the truncation", err)
	}
}

// TestMappedNotResidentIsRefused: a mapped model whose weights do not fit
// the memory available (with model.ResidentMargin kept free) is refused
// before anything is mapped, with both figures; one that fits opens.
func TestMappedNotResidentIsRefused(t *testing.T) {
	dir := filepath.Join("testdata", "mistral")
	_, err := hf.Load(dir, hf.Options{Map: true, Available: model.ResidentMargin + 1000})
	if err == nil || !strings.Contains(err.Error(), "resident; the machine has") || !strings.Contains(err.Error(), "mapped from its files") {
		t.Fatalf("Load with %d bytes available: %v; want the residency refusal", model.ResidentMargin+1000, err)
	}
	if _, err := hf.Load(dir, hf.Options{Map: true, Available: model.ResidentMargin + 1<<20}); err != nil {
		t.Fatalf("Load with a MiB more than the margin: %v", err)
	}
}

// TestMappedSummaryCountsEveryWeight: a graph summary counts a weight read
// in place as it counts a tensor, once, the tied head's table included.
func TestMappedSummaryCountsEveryWeight(t *testing.T) {
	for _, variant := range []string{"mistral", "distil"} {
		dir := filepath.Join("testdata", variant)
		var params []int
		for _, o := range []hf.Options{{}, {Map: true}} {
			g, err := model.Build(load(t, dir, o).Model, model.BuildOptions{Batch: 1, SeqLen: 4})
			if err != nil {
				t.Fatal(err)
			}
			s, err := g.Summary()
			if err != nil {
				t.Fatal(err)
			}
			params = append(params, s.Params)
		}
		if params[0] != params[1] {
			t.Errorf("%s: the summary counts %d parameters read, %d mapped", variant, params[0], params[1])
		}
	}
}

// TestMappedTruncatedUnderADecode truncates the shards of a mapped model
// from another goroutine while a decoder steps on: a step fails with the
// one-line error, and the process lives on.
func TestMappedTruncatedUnderADecode(t *testing.T) {
	dir := copyVariant(t, "mistral")
	m := load(t, dir, hf.Options{Map: true}).Model
	dec, err := model.NewDecoder(m, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	stepped, truncated := make(chan struct{}), make(chan error, 1)
	go func() {
		<-stepped
		for _, shard := range mistralShards {
			if err := os.Truncate(filepath.Join(dir, shard), 0); err != nil {
				truncated <- err
				return
			}
		}
		truncated <- nil
	}()
	var stepErr error
	for step, after := 0, -1; stepErr == nil && after < 3; step++ {
		if dec.Len() == 8 {
			dec.Reset()
		}
		_, stepErr = dec.Step([]int{step % m.Config.Vocab})
		switch {
		case step == 0:
			close(stepped)
		case after >= 0:
			after++
		default:
			select {
			case err := <-truncated:
				if err != nil {
					t.Fatal(err)
				}
				after = 0
			default:
			}
		}
	}
	if stepErr == nil || !strings.Contains(stepErr.Error(), "truncated or replaced while the model had it mapped") || strings.Contains(stepErr.Error(), "\n") {
		t.Fatalf("stepping on after the truncation: %v; want one line naming the truncation", stepErr)
	}
}

// TestMappedF32StaysRead: an F32 directory opens with Map as without it,
// read into the one block of float32 the decoder streams from huge pages.
func TestMappedF32StaysRead(t *testing.T) {
	for _, variant := range []string{"llama", "prefixed"} {
		m := load(t, filepath.Join("testdata", variant), hf.Options{Map: true}).Model
		if m.HasStored() || m.Config.MappedWeights != 0 {
			t.Errorf("%s (F32): HasStored %t, MappedWeights %v; want every weight read", variant, m.HasStored(), m.Config.MappedWeights)
		}
	}
}

// TestSaveMappedGPT2: an F16 GPT-2 opened with its embeddings mapped saves
// as the same model read into float32 does, weight for weight.
func TestSaveMappedGPT2(t *testing.T) {
	src := filepath.Join("testdata", "distil")
	m := load(t, src, hf.Options{Map: true}).Model
	if !m.HasStored() {
		t.Fatal("distil opened with Map keeps no weight in its file")
	}
	dir := filepath.Join(t.TempDir(), "saved")
	if err := hf.SaveGPT2(dir, m, nil); err != nil {
		t.Fatal(err)
	}
	saved, read := load(t, dir, hf.Options{}).Model, load(t, src, hf.Options{}).Model
	for i, p := range read.Params {
		got, want := saved.Params[i].Value.Float32s(), p.Value.Float32s()
		for j := range want {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("%s[%d]: saved %v, read %v", p.Name, j, got[j], want[j])
			}
		}
	}
}
