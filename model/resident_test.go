package model

import (
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/safetensors"
)

// TestCheckResidentWithin refuses what does not fit beside the margin, with
// both figures, and lets through what does.
func TestCheckResidentWithin(t *testing.T) {
	const gb = 1e9
	if err := CheckResidentWithin(16.1*gb, 16.1*gb+ResidentMargin, "weights"); err != nil {
		t.Errorf("exactly the margin to spare: %v", err)
	}
	err := CheckResidentWithin(16.1*gb, 12*gb, "llama: the model's weights")
	if err == nil || !strings.Contains(err.Error(), "llama: the model's weights needs 15.0 GiB resident; the machine has 11.2 GiB available") {
		t.Errorf("16.1 GB in 12 GB: %v", err)
	}
}

// TestParseMemAvailable reads /proc/meminfo's line, in kB, and nothing
// else.
func TestParseMemAvailable(t *testing.T) {
	raw := "MemTotal:       24576000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n"
	if got, ok := parseMemAvailable([]byte(raw)); !ok || got != 20000000*1024 {
		t.Errorf("parseMemAvailable = %v, %t; want %v", got, ok, 20000000*1024)
	}
	if _, ok := parseMemAvailable([]byte("MemTotal: 1 kB\n")); ok {
		t.Error("no MemAvailable line: ok")
	}
}

// TestMappedWeightsLeaveTheEstimates: the weights a model keeps in its
// files count in no float32 estimate (InferenceBytes, EstimateBytes,
// DecodeBytes), the activations as before.
func TestMappedWeightsLeaveTheEstimates(t *testing.T) {
	cfg := Config{Vocab: 50, Context: 16, DModel: 32, Heads: 4, Layers: 2, MLP: true, DFF: 64}
	mapped := cfg
	mapped.MappedWeights = cfg.ParamCount() - 100
	if got, want := cfg.InferenceBytes(2)-mapped.InferenceBytes(2), 4*mapped.MappedWeights; got != want {
		t.Errorf("InferenceBytes: mapping lowers it by %v, want %v", got, want)
	}
	if got, want := cfg.EstimateBytes(1, 0)-mapped.EstimateBytes(1, 0), 24*mapped.MappedWeights; got != want {
		t.Errorf("EstimateBytes: mapping lowers it by %v, want %v", got, want)
	}
	if got, want := (&Model{Config: cfg, Dtype: tensor.Float32}).DecodeBytes(1, 8)-(&Model{Config: mapped, Dtype: tensor.Float32}).DecodeBytes(1, 8), 4*mapped.MappedWeights; got != want {
		t.Errorf("DecodeBytes: mapping lowers it by %v, want %v", got, want)
	}
}

// TestWidenStoredRefusesWhatWouldNotFit: widening a mapped model whose
// float32 weights exceed MaxMemory is refused with the estimate before
// anything is allocated; the model keeps its stored weights.
func TestWidenStoredRefusesWhatWouldNotFit(t *testing.T) {
	cfg := Config{Vocab: 128256, Context: 16, DModel: 4096, Heads: 32, Layers: 32, MLP: true, DFF: 14336}
	w := &ops.Stored{Name: "tok_emb.weight", Rows: 1, Cols: 2, DType: safetensors.BF16, Parts: []ops.StoredPart{{Rows: 1, Data: make([]byte, 4)}}}
	m := &Model{Config: cfg, Dtype: tensor.Float32, Params: []Param{{Name: "tok_emb.weight", Stored: w}}}
	err := m.WidenStored()
	if err == nil || !strings.Contains(err.Error(), "the model widened to float32 (the Gorgonia path reads float32 weights only) needs an estimated") {
		t.Fatalf("WidenStored of an 8B shape: %v; want the estimate's refusal", err)
	}
	if !m.HasStored() {
		t.Error("the refused model lost its stored weight")
	}
}
