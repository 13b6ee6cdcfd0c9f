package model

import (
	"io"
	"math/rand/v2"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/internal/ops"
	"github.com/pkg/errors"
	"gorgonia.org/tensor"
)

// Param is one named weight: a tensor, or for a large matrix of a model
// opened for inspection, the matrix kept in its file's dtype where the
// file's mapping holds it (Stored, with Value nil; see stored.go).
type Param struct {
	Name   string
	Value  *tensor.Dense
	Stored *ops.Stored
}

// Model holds the weights of one model. The tensors are shared by every graph
// Build binds them into, so an optimizer that updates them in place updates
// all of those graphs at once.
type Model struct {
	Config Config
	Dtype  tensor.Dtype // tensor.Float32 or tensor.Float64
	Params []Param      // in Config.ParamSpecs order
	// mappings are the file mappings the stored parameters read, which
	// Close unmaps (KeepMapped).
	mappings []io.Closer
}

// KeepMapped gives m the mappings its stored parameters read, for Close.
func (m *Model) KeepMapped(mappings ...io.Closer) { m.mappings = append(m.mappings, mappings...) }

// Close unmaps the files m's stored parameters read; they must not be read
// again (a model without them has nothing to close). A command that exits
// after its work need not call it.
func (m *Model) Close() error {
	var first error
	for _, c := range m.mappings {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	m.mappings = nil
	return first
}

// New returns a model with weights drawn from seed. The draws are made in
// float64 in ParamSpecs order and then converted, so a Float32 and a Float64
// model of the same seed hold the same weights up to rounding.
func New(cfg Config, dtype tensor.Dtype, seed uint64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if dtype != tensor.Float32 && dtype != tensor.Float64 {
		return nil, errors.Errorf("model dtype %v: only float32 and float64 are supported", dtype)
	}
	rng := rand.New(rand.NewPCG(seed, 0x617474_6e73636f)) // second word spells "attnsco"
	m := &Model{Config: cfg, Dtype: dtype}
	if dtype == tensor.Float64 {
		m.Params = initParams(cfg, ParamBlock[float64](cfg), rng)
	} else {
		m.Params = initParams(cfg, ParamBlock[float32](cfg), rng)
	}
	return m, nil
}

// initParams draws cfg's parameters, in ParamSpecs' order, into their
// parts of block.
func initParams[T float32 | float64](cfg Config, block map[string][]T, rng *rand.Rand) []Param {
	var params []Param
	for _, spec := range cfg.ParamSpecs() {
		values := block[spec.Name]
		for i := range values {
			switch spec.Init {
			case InitNormal:
				values[i] = T(rng.NormFloat64() * InitStd)
			case InitOnes:
				values[i] = 1
			}
		}
		params = append(params, Param{Name: spec.Name, Value: tensor.New(tensor.WithShape(spec.Shape...), tensor.WithBacking(values))})
	}
	return params
}

// ParamBlock returns every parameter cfg has, by name, as its part of one
// zeroed block of memory that starts on a 2 MiB boundary
// (kernels.HugePageAligned), parameters in ParamSpecs' order. Held in one
// block, a model's weights are backed by huge pages all but the last
// partial one (WeightsInHugePages), where a slice each leaves up to 2 MiB
// at either end of each in 4 KiB pages: a tenth of a Llama of
// stories110M's shape, whose decoding GEMVs read one block 1-2% faster
// (kernels' BenchmarkDecodeGemvs, block/2MiB).
func ParamBlock[T float32 | float64](cfg Config) map[string][]T {
	return ParamBlockWithout[T](cfg, nil)
}

// ParamBlockWithout is ParamBlock of the parameters skip does not list:
// a mapped model's vectors and copied matrices, beside the matrices it
// keeps in their files.
func ParamBlockWithout[T float32 | float64](cfg Config, skip map[string]bool) map[string][]T {
	specs := cfg.ParamSpecs()
	total := 0
	for _, spec := range specs {
		if !skip[spec.Name] {
			total += product(spec.Shape)
		}
	}
	block := kernels.HugePageAligned[T](total)
	parts := make(map[string][]T, len(specs))
	for _, spec := range specs {
		if skip[spec.Name] {
			continue
		}
		n := product(spec.Shape)
		parts[spec.Name], block = block[:n:n], block[n:]
	}
	return parts
}

// Param returns the tensor called name, or nil if the model has none. A
// stored parameter comes widened to float32, a copy made at each call (nil
// when its mapping faults: the file truncated under it).
func (m *Model) Param(name string) *tensor.Dense {
	for _, p := range m.Params {
		if p.Name != name {
			continue
		}
		if p.Stored == nil {
			return p.Value
		}
		t, err := widened(p.Stored)
		if err != nil {
			return nil
		}
		return t
	}
	return nil
}

// LMHeadWeight is the LM head's weight (V, D), the tensor
// Config.UnembeddingName names, for the analyses that read the unembedding.
func (m *Model) LMHeadWeight() *tensor.Dense { return m.Param(m.Config.UnembeddingName()) }

// newDense builds a tensor of the given dtype from float64 values.
func newDense(dtype tensor.Dtype, shape []int, values []float64) *tensor.Dense {
	if dtype == tensor.Float64 {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(values))
	}
	f32 := make([]float32, len(values))
	for i, v := range values {
		f32[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f32))
}

func product(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}
