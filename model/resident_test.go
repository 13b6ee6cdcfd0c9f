package model

import (
	"runtime"
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
	if got, ok := parseKB([]byte(raw), "MemAvailable:"); !ok || got != 20000000*1024 {
		t.Errorf("parseKB = %v, %t; want %v", got, ok, 20000000*1024)
	}
	if _, ok := parseKB([]byte("MemTotal: 1 kB\n"), "MemAvailable:"); ok {
		t.Error("no MemAvailable line: ok")
	}
}

// TestMemAvailableHereCountsWhatTheProcessHolds: a status file's VmRSS
// line is read in kB; and with 256 MiB written and held, the resident set
// MemAvailableHere adds to the machine's MemAvailable is at least that, so
// weights the process has read are not counted twice.
func TestMemAvailableHereCountsWhatTheProcessHolds(t *testing.T) {
	raw := "Name:\tgo\nVmPeak:\t  900000 kB\nVmRSS:\t  123456 kB\n"
	if got, ok := parseKB([]byte(raw), "VmRSS:"); !ok || got != 123456*1024 {
		t.Errorf("parseKB(VmRSS) = %v, %t; want %v", got, ok, 123456*1024)
	}
	if _, ok := MemAvailable(); !ok {
		if _, ok := MemAvailableHere(); ok {
			t.Error("MemAvailableHere known where MemAvailable is not")
		}
		return
	}
	held := make([]byte, 256<<20)
	for i := range held {
		held[i] = 1
	}
	if own := ownResident(); own < float64(len(held)) {
		t.Errorf("the resident set read is %v bytes, less than the %d bytes held", own, len(held))
	}
	runtime.KeepAlive(held)
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
