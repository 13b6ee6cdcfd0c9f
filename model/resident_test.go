package model

import (
	"strings"
	"testing"

	"gorgonia.org/tensor"
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
