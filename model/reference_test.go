package model

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/layers"
)

// referenceVariants are decodeVariants and what those leave out: ALiBi's
// slopes for a head count that is not a power of two, a rotary base of the
// config's with a window on grouped-query heads, a latent with ALiBi and a
// window, a model with no bias anywhere, and normsVariants.
func referenceVariants() map[string]Config {
	out := decodeVariants()
	out["alibi 6 heads+mlp"] = Config{Vocab: 11, Context: 9, DModel: 24, Heads: 6, Layers: 2, MLP: true, DFF: 24, Position: PositionALiBi}
	out["rope base+gqa+window"] = Config{Vocab: 11, Context: 9, DModel: 16, Heads: 4, Layers: 2, Position: PositionRope, RopeBase: 50, KVHeads: 2, Window: 4}
	out["mla+alibi+window+mlp"] = Config{Vocab: 11, Context: 9, DModel: 16, Heads: 4, Layers: 2, MLP: true, DFF: 24, Position: PositionALiBi, KVLatent: 6, Window: 3, QKVBias: true}
	out["no biases+mlp"] = Config{Vocab: 11, Context: 9, DModel: 16, Heads: 4, Layers: 2, MLP: true, DFF: 24, NormBias: FlagOff, MLPBias: FlagOff}
	maps.Copy(out, normsVariants())
	maps.Copy(out, ropeVariants())
	maps.Copy(out, architectureVariants())
	return out
}

// referenceTolerance is how far the fast paths' logits may be from the
// reference's, relative to the largest logit (at least 1): float64 the
// rounding of a different order of sums, float32 that of float32
// arithmetic (the weights are the same numbers: the reference reads
// float32 ones exactly).
var referenceTolerance = map[tensor.Dtype]float64{tensor.Float64: 1e-12, tensor.Float32: 2e-5, bf16: 2e-5}

// TestReferenceIsTheOracle: the reference decoder (reference.go), stepped
// along each row, gives the logits of every step of a Decoder whose cache
// starts at one position and grows, and of a full forward (Build) at every
// position, for every variant, on both paths, in float64 and float32,
// within referenceTolerance. Weights are random at scale 0.5, so every
// part moves the logits. Run with -v for the largest differences seen.
func TestReferenceIsTheOracle(t *testing.T) {
	worst := map[string]float64{}
	variants := referenceVariants()
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range variants {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		for _, path := range layers.Paths {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32, bf16} {
				cfg := variants[name]
				cfg.Attention = string(path)
				t.Run(fmt.Sprintf("%s/%s/%s", name, path, dtypeName(dt)), func(t *testing.T) {
					m := referenceModel(t, cfg, dt)
					const b = 2
					tt := cfg.Context
					rng := rand.New(rand.NewPCG(8, 9))
					tokens := make([]int, b*tt)
					for i := range tokens {
						tokens[i] = rng.IntN(cfg.Vocab)
					}
					want := referenceLogits(t, m, tokens, b, tt)
					for check, got := range map[string][]float64{
						"decoder": decoderLogits(t, m, tokens, b, tt),
						"forward": prefixLogits(t, m, tokens, b, tt, tt),
					} {
						e := relativeDiff(got, want)
						key := fmt.Sprintf("%s %s", dtypeName(dt), check)
						worst[key] = math.Max(worst[key], e)
						if !(e <= referenceTolerance[dt]) {
							t.Errorf("%s logits differ from the reference's by %.3g relative, over %.0e", check, e, referenceTolerance[dt])
						}
					}
				})
			}
		}
	}
	t.Logf("largest differences from the reference, relative to the largest logit: %v", worst)
}

// bf16 stands, among TestReferenceIsTheOracle's dtypes, for a float32
// model whose matrices are kept in BF16 (Param.Stored): read in place on
// the fused path, widened (WidenStored) for the Gorgonia path.
var bf16 = tensor.Dtype{Type: reflect.TypeOf(uint16(0))}

// dtypeName names dt in the test's names: bf16 for bf16.
func dtypeName(dt tensor.Dtype) string {
	if dt == bf16 {
		return "bf16"
	}
	return dt.String()
}

// referenceModel is randomModel of dt, or for bf16 a float32 one whose
// matrices are rounded to BF16 and stored as such.
func referenceModel(t *testing.T, cfg Config, dt tensor.Dtype) *Model {
	t.Helper()
	if dt != bf16 {
		return randomModel(t, cfg, dt)
	}
	m := storedBF16(randomModel(t, cfg, tensor.Float32))
	if path, _ := cfg.Path(); path == layers.Gorgonia {
		if err := m.WidenStored(); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// storedBF16 keeps every matrix of the float32 model m in BF16, rounded to
// nearest even, in memory as a file's mapping would hold it.
func storedBF16(m *Model) *Model {
	for i, p := range m.Params {
		if p.Value.Dims() != 2 {
			continue
		}
		values := p.Value.Float32s()
		raw := make([]byte, 2*len(values))
		for j, v := range values {
			bits := math.Float32bits(v)
			binary.LittleEndian.PutUint16(raw[2*j:], uint16((bits+0x7fff+(bits>>16)&1)>>16))
		}
		rows, cols := p.Value.Shape()[0], p.Value.Shape()[1]
		m.Params[i] = Param{Name: p.Name, Stored: &ops.Stored{Name: p.Name, Rows: rows, Cols: cols, DType: safetensors.BF16,
			Parts: []ops.StoredPart{{Rows: rows, Data: raw, File: "memory"}}}}
	}
	return m
}

// referenceLogits steps a Reference along each of the b rows of tokens (b
// rows of tt) and returns the logits (B*T, V), row-major (b, t).
func referenceLogits(t *testing.T, m *Model, tokens []int, b, tt int) []float64 {
	t.Helper()
	var logits []float64
	for row := 0; row < b; row++ {
		ref, err := NewReference(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, token := range tokens[row*tt : (row+1)*tt] {
			logits = append(logits, ref.Step(token)...)
		}
	}
	return logits
}

// decoderLogits steps a Decoder whose cache starts at one position (so it
// grows on the way) over the b rows of tokens together and returns the
// logits (B*T, V), row-major (b, t).
func decoderLogits(t *testing.T, m *Model, tokens []int, b, tt int) []float64 {
	t.Helper()
	dec, err := NewGrowingDecoder(m, b, 1, tt)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	v := m.Config.Vocab
	logits := make([]float64, b*tt*v)
	for s := 0; s < tt; s++ {
		step := make([]int, b)
		for r := range step {
			step[r] = tokens[r*tt+s]
		}
		got, err := dec.Step(step)
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < b; r++ {
			copy(logits[(r*tt+s)*v:][:v], got[r*v:][:v])
		}
	}
	return logits
}

// relativeDiff is max |got - want| / max(1, max |want|).
func relativeDiff(got, want []float64) float64 {
	scale, e := 1.0, 0.0
	for i, w := range want {
		scale = math.Max(scale, math.Abs(w))
		if d := math.Abs(got[i] - w); d > e || math.IsNaN(d) {
			e = d
		}
	}
	return e / scale
}

// TestReferenceMatchesPyTorch: the reference's logits on each PyTorch
// fixture's weights and tokens are PyTorch's (float64, within 5e-12
// relative: the fixtures hold their logits to 12 significant digits), so the
// oracle is itself held to an independent implementation.
func TestReferenceMatchesPyTorch(t *testing.T) {
	for _, name := range torchFixtures {
		f := loadTorchFixture(t, name)
		m := torchModel(t, f, tensor.Float64)
		var ids []int
		var want []float64
		for b := 0; b < f.Batch; b++ {
			ids = append(ids, f.Tokens[b]...)
		}
		for _, row := range f.Logits {
			want = append(want, row...)
		}
		e := relativeDiff(referenceLogits(t, m, ids, f.Batch, f.SeqLen), want)
		if !(e <= 5e-12) {
			t.Errorf("%s: logits differ from PyTorch's by %.3g relative, over 5e-12", name, e)
		}
		t.Logf("%s: %.3g", name, e)
	}
}
