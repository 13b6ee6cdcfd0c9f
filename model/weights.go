package model

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/safetensors"
)

// Tensors returns m's weights as safetensors tensors, named and shaped as
// Config.ParamSpecs says, F32 or F64 after m.Dtype, in that order. A view
// or transposed tensor is written in row-major order; NaN and Inf are
// refused, since FromTensors would refuse them.
func (m *Model) Tensors() ([]safetensors.Tensor, error) {
	dtype, specs, err := m.savedSpecs()
	if err != nil {
		return nil, err
	}
	tensors := make([]safetensors.Tensor, len(specs))
	for i, spec := range specs {
		p := m.Params[i]
		if err := checkParam(i, p, spec, m.Dtype); err != nil {
			return nil, err
		}
		data, err := tensorBytes(p.Value, spec.Shape)
		if err != nil {
			return nil, errors.Wrapf(err, "tensor %q", p.Name)
		}
		tensors[i] = safetensors.Tensor{Name: p.Name, DType: dtype, Shape: spec.Shape, Data: data}
	}
	return tensors, nil
}

// WeightsDigest is the hex SHA-256 of m's weights as Tensors gives them: each
// parameter's name, dtype, shape and little-endian bytes, in ParamSpecs
// order. Equal digests mean bit-identical weights; train stores it in an
// optimizer state file to bind the state to its checkpoint.
func WeightsDigest(m *Model) (string, error) {
	dtype, err := safetensorsDType(m.Dtype)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	buf := make([]byte, digestChunk)
	for _, p := range m.Params {
		if p.Stored != nil {
			return "", errors.Errorf("tensor %q is kept in its file's %s; a digest is of float32 weights (widen the model first)", p.Name, p.Stored.DType)
		}
		shape := []int(p.Value.Shape())
		encode, err := valuesEncoder(p.Value, ParamSpec{Name: p.Name, Shape: shape})
		if err != nil {
			return "", errors.Wrapf(err, "tensor %q", p.Name)
		}
		n := product(shape) * int(p.Value.Dtype().Size())
		fmt.Fprintf(h, "%s\x00%s\x00%v\x00%d\x00", p.Name, dtype, shape, n)
		// A chunk at a time: the digest costs one buffer, not a copy of the
		// weights.
		for off := 0; off < n; off += digestChunk {
			chunk := buf[:min(digestChunk, n-off)]
			if err := encode(chunk, off); err != nil {
				return "", err
			}
			h.Write(chunk)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// digestChunk is how many bytes of a tensor WeightsDigest encodes at a
// time: a multiple of every dtype's size.
const digestChunk = 1 << 20

// tensorBytes returns the little-endian bytes of t in row-major order,
// refusing NaN and Inf. Views and transposed tensors are materialised first:
// their backing array is not in row-major order.
func tensorBytes(t *tensor.Dense, shape []int) ([]byte, error) {
	materialized := t.Materialize()
	dense, ok := materialized.(*tensor.Dense)
	if !ok {
		return nil, errors.Errorf("materialises to a %T, want a *tensor.Dense", materialized)
	}
	n := product(shape)
	switch data := dense.Data().(type) {
	case []float32:
		if len(data) != n {
			return nil, errors.Errorf("backing array holds %d values, shape %v needs %d", len(data), shape, n)
		}
		if err := checkFinite(data, shape); err != nil {
			return nil, err
		}
		return safetensors.EncodeFloat32(data), nil
	case []float64:
		if len(data) != n {
			return nil, errors.Errorf("backing array holds %d values, shape %v needs %d", len(data), shape, n)
		}
		if err := checkFinite(data, shape); err != nil {
			return nil, err
		}
		return safetensors.EncodeFloat64(data), nil
	default:
		return nil, errors.Errorf("holds %T, want []float32 or []float64", data)
	}
}

// checkFinite refuses NaN and Inf, naming where in the tensor it sits.
func checkFinite[T float32 | float64](values []T, shape []int) error {
	if i := FirstNonFinite(values); i >= 0 {
		return errors.Errorf("value %v at %s is not finite", values[i], position(shape, i))
	}
	return nil
}

// position spells flat index i of a row-major tensor of shape as
// "index [r c] (flat 17)".
func position(shape []int, i int) string {
	coords := make([]int, len(shape))
	rest := i
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			coords[d] = rest % shape[d]
			rest /= shape[d]
		}
	}
	return fmt.Sprintf("index %v (flat %d)", coords, i)
}

func safetensorsDType(dt tensor.Dtype) (string, error) {
	switch dt {
	case tensor.Float32:
		return safetensors.F32, nil
	case tensor.Float64:
		return safetensors.F64, nil
	}
	return "", errors.Errorf("model dtype %v: only float32 and float64 are supported", dt)
}

// FromValues builds the model cfg describes from the values of its
// parameters by name: every parameter, each a []float32 (a Float32 model) or
// a []float64 (Float64) of its shape's size, one type throughout, every
// value finite; or, in a Float32 model, a matrix kept in its file's dtype
// (an *ops.Stored of its shape, checked for non-finite values in one pass
// over its bytes). The slices become the model's tensors, not copies.
func FromValues(cfg Config, values map[string]any) (*Model, error) {
	specs := cfg.ParamSpecs()
	m := &Model{Config: cfg, Params: make([]Param, 0, len(specs))}
	first := "" // the parameter that set m.Dtype
	for _, spec := range specs {
		var value *tensor.Dense
		var err error
		switch v := values[spec.Name].(type) {
		case []float32:
			value, err = finiteDense(tensor.Float32, spec.Shape, v)
		case []float64:
			value, err = finiteDense(tensor.Float64, spec.Shape, v)
		case *ops.Stored:
			err = storedShape(spec.Shape, v)
			m.Params = append(m.Params, Param{Name: spec.Name, Stored: v})
			m.Config.MappedWeights += float64(v.Rows) * float64(v.Cols)
		default:
			err = errors.Errorf("has %T values, want []float32, []float64 or *ops.Stored", v)
		}
		if err != nil {
			return nil, errors.Wrapf(err, "tensor %q", spec.Name)
		}
		if value == nil {
			continue
		}
		if m.Dtype == (tensor.Dtype{}) {
			m.Dtype, first = value.Dtype(), spec.Name
		} else if value.Dtype() != m.Dtype {
			return nil, errors.Errorf("tensor %q is %v, %q %v; all tensors must share one dtype", spec.Name, value.Dtype(), first, m.Dtype)
		}
		m.Params = append(m.Params, Param{Name: spec.Name, Value: value})
	}
	if len(values) != len(specs) {
		return nil, errors.Errorf("%d tensors given, the model has %d", len(values), len(specs))
	}
	if err := storedFinite(m.Params); err != nil {
		return nil, err
	}
	switch {
	case m.Dtype == (tensor.Dtype{}):
		m.Dtype = tensor.Float32
	case m.HasStored() && m.Dtype != tensor.Float32:
		return nil, errors.Errorf("a model with stored weights is float32, not %v", m.Dtype)
	}
	return m, nil
}

// storedShape refuses a stored matrix that is not one, or not of shape.
func storedShape(shape []int, s *ops.Stored) error {
	if err := s.Check(); err != nil {
		return err
	}
	if len(shape) != 2 || shape[0] != s.Rows || shape[1] != s.Cols {
		return errors.Errorf("is stored (%d, %d), shape %v", s.Rows, s.Cols, shape)
	}
	return nil
}

// storedFinite refuses a stored matrix holding a NaN or an infinity,
// naming where it sits: one pass over the bytes of every one of them,
// spread over the cores, the first in ParamSpecs order reported.
func storedFinite(params []Param) error {
	errs := make([]error, len(params))
	kernels.ParallelFor(len(params), kernels.ParallelMinWork, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if s := params[i].Stored; s != nil {
				errs[i] = finiteStored(params[i].Name, s)
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// finiteStored refuses a NaN or an infinity in s, the parameter called
// name, naming where it sits: in the file's tensor, when the part holding
// it names one.
func finiteStored(name string, s *ops.Stored) error {
	row, col, err := s.FirstNonFinite()
	if err != nil || row < 0 {
		return err
	}
	value := make([]float32, s.Cols)
	if err := s.WidenRows(value, row, row+1); err != nil {
		return err
	}
	part, in := s.PartAt(row)
	if part.Tensor == "" {
		return errors.Errorf("tensor %q: value %v at %s is not finite", name, value[col], position([]int{s.Rows, s.Cols}, row*s.Cols+col))
	}
	return errors.Errorf("%s: tensor %s: value %v at %s is not finite", part.File, msg.Quote(part.Tensor), value[col], position([]int{part.Rows, s.Cols}, in*s.Cols+col))
}

// finiteDense is values as a tensor of shape, refusing NaN and Inf.
func finiteDense[T float32 | float64](dtype tensor.Dtype, shape []int, values []T) (*tensor.Dense, error) {
	if len(values) != product(shape) {
		return nil, errors.Errorf("has %d values, shape %v needs %d", len(values), shape, product(shape))
	}
	if err := checkFinite(values, shape); err != nil {
		return nil, err
	}
	return tensor.New(tensor.Of(dtype), tensor.WithShape(shape...), tensor.WithBacking(values)), nil
}

// CheckTensors validates the names, dtypes and shapes of tensors against
// the model cfg describes, without looking at their data, so a file can be
// refused from its header alone: every parameter present with its exact
// shape, one dtype (F32 or F64) throughout, nothing else. It returns the
// model dtype they share.
func CheckTensors(cfg Config, tensors []safetensors.Info) (tensor.Dtype, error) {
	// Every block has tensors of its own, so a file with fewer tensors than
	// blocks cannot match; checking first keeps a corrupt layer count from
	// making ParamSpecs list billions of names.
	if cfg.Layers > len(tensors) {
		return tensor.Dtype{}, errors.Errorf("config has model.layers=%d but the file holds only %d tensors", cfg.Layers, len(tensors))
	}
	byName := make(map[string]safetensors.Info, len(tensors))
	for _, t := range tensors {
		byName[t.Name] = t
	}
	var dtype tensor.Dtype
	var first, firstDType string
	for _, spec := range cfg.ParamSpecs() {
		t, ok := byName[spec.Name]
		if !ok {
			return tensor.Dtype{}, errors.Errorf("tensor %q is missing (%s)", spec.Name, explainPresence(cfg, spec.Name))
		}
		delete(byName, spec.Name)
		dt, ok := modelDTypes[t.DType]
		if !ok {
			return tensor.Dtype{}, errors.Errorf("tensor %q has dtype %s, want F32 or F64", spec.Name, t.DType)
		}
		if first == "" {
			dtype, first, firstDType = dt, spec.Name, t.DType
		} else if dt != dtype {
			return tensor.Dtype{}, errors.Errorf("tensor %q has dtype %s but %q has %s; all tensors must share one dtype",
				spec.Name, t.DType, first, firstDType)
		}
		if !slices.Equal(t.Shape, spec.Shape) {
			return tensor.Dtype{}, errors.Errorf("tensor %q has shape %v, want %v%s",
				spec.Name, t.Shape, spec.Shape, explainShape(cfg, spec, t.Shape))
		}
	}
	for _, t := range tensors {
		if _, extra := byName[t.Name]; extra {
			return tensor.Dtype{}, errors.Errorf("unexpected tensor %s: not a parameter of the model its config describes (%d unexpected in all)",
				msg.Quote(t.Name), len(byName))
		}
	}
	return dtype, nil
}

// modelDTypes maps the checkpoint dtypes to model dtypes.
var modelDTypes = map[string]tensor.Dtype{safetensors.F32: tensor.Float32, safetensors.F64: tensor.Float64}

// explainShape names the config fields behind the first dimension where got
// and spec differ, e.g. " (dim 1 is model.d_model=32)", or "" when the rank
// differs or the tensor is not one it knows.
func explainShape(cfg Config, spec ParamSpec, got []int) string {
	dims := dimNames(cfg, spec.Name)
	if len(dims) != len(spec.Shape) || len(got) != len(spec.Shape) {
		return ""
	}
	for i := range got {
		if got[i] != spec.Shape[i] {
			return fmt.Sprintf(" (dim %d is %s)", i, dims[i])
		}
	}
	return ""
}

// dimNames says which config fields give each dimension of the named tensor,
// following ParamSpecs.
func dimNames(cfg Config, name string) []string {
	v := fmt.Sprintf("model.vocab=%d", cfg.Vocab)
	t := fmt.Sprintf("model.context=%d", cfg.Context)
	d := fmt.Sprintf("model.d_model=%d", cfg.DModel)
	d3 := fmt.Sprintf("3*model.d_model=%d", 3*cfg.DModel)
	if kv := cfg.KVHeadCount(); kv != cfg.Heads {
		d3 = fmt.Sprintf("model.d_model+2*model.kv_heads*d_head=%d", cfg.DModel+2*kv*cfg.DHead())
	}
	hd, dh := d, fmt.Sprintf("model.d_model/model.heads=%d", cfg.DHead())
	if cfg.HeadDim > 0 { // the heads' width apart from d_model
		d3 = fmt.Sprintf("(model.heads+2*model.kv_heads)*model.head_dim=%d", (cfg.Heads+2*cfg.KVHeadCount())*cfg.HeadDim)
		hd, dh = fmt.Sprintf("model.heads*model.head_dim=%d", cfg.Heads*cfg.HeadDim), fmt.Sprintf("model.head_dim=%d", cfg.HeadDim)
	}
	f := fmt.Sprintf("model.d_ff=%d", cfg.DFF)
	switch {
	case name == "tok_emb.weight", name == "lm_head.weight":
		return []string{v, d}
	case name == "pos_emb.weight":
		return []string{t, d}
	case name == "lm_head.bias":
		return []string{v}
	case strings.HasSuffix(name, ".attn.qkv.weight"):
		return []string{d3, d}
	case strings.HasSuffix(name, ".attn.qkv.bias"):
		return []string{d3}
	case strings.HasSuffix(name, ".attn.out.weight"):
		return []string{d, hd}
	case strings.HasSuffix(name, ".mlp.fc.weight"), strings.HasSuffix(name, ".mlp.gate.weight"), strings.HasSuffix(name, ".mlp.up.weight"):
		return []string{f, d}
	case strings.HasSuffix(name, ".mlp.fc.bias"), strings.HasSuffix(name, ".mlp.gate.bias"), strings.HasSuffix(name, ".mlp.up.bias"):
		return []string{f}
	case strings.HasSuffix(name, ".mlp.proj.weight"), strings.HasSuffix(name, ".mlp.down.weight"):
		return []string{d, f}
	case strings.HasSuffix(name, "_norm.weight"):
		return []string{dh}
	}
	return []string{d}
}

// explainPresence says why the config expects the named tensor.
func explainPresence(cfg Config, name string) string {
	switch {
	case strings.HasSuffix(name, ".attn.qkv.bias"):
		return "expected since model.qkv_bias=true"
	case strings.HasSuffix(name, ".attn.out.bias"):
		return "expected since model.out_bias=true"
	case name == "lm_head.bias":
		return "expected since model.lm_head_bias=true"
	case name == "lm_head.weight":
		return "expected since model.tie_embeddings is not set"
	case strings.HasSuffix(name, "_norm.weight"):
		return "expected since model.qk_norm=true"
	case strings.Contains(name, ".mlp.") && strings.HasSuffix(name, ".bias"):
		return "expected since model.mlp=true and model.mlp_bias is not false"
	case strings.HasSuffix(name, ".bias") && (strings.Contains(name, ".ln") || strings.HasPrefix(name, "ln_f.")):
		return "expected since model.norm = layernorm and model.norm_bias is not false"
	case strings.Contains(name, ".ln1."), strings.Contains(name, ".ln2."),
		strings.Contains(name, ".mlp."), strings.HasPrefix(name, "ln_f."):
		return "expected since model.mlp=true"
	case strings.HasPrefix(name, "blocks."):
		return fmt.Sprintf("expected since model.layers=%d", cfg.Layers)
	}
	return "every model has it"
}
