package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/internal/safetensors"
)

// CheckpointFormat is the metadata "format" value of the checkpoints Save
// writes and the only one Load accepts.
const CheckpointFormat = "attnscope/1"

// Metadata keys of a checkpoint.
const (
	metaConfig = "config"
	metaStep   = "step"
	metaFormat = "format"
)

// CheckpointInfo is what a checkpoint carries besides the weights.
type CheckpointInfo struct {
	RunConfig json.RawMessage // metadata "config": a JSON object whose "model" member is a model.Config
	Step      int             // metadata "step"
	Format    string          // metadata "format", "attnscope/1"
}

// Save writes m as a safetensors checkpoint at path, replacing any file there
// atomically (see safefile.WriteFileAtomic). Tensors are named and shaped
// as Config.ParamSpecs says, F32 or F64 after m.Dtype. runConfig must be a
// JSON object whose "model" member equals m.Config; it is stored verbatim as
// metadata "config", next to "step" and "format". Non-finite weights are
// refused, since Load would refuse them.
func Save(path string, m *Model, runConfig []byte, step int) error {
	tensors, metadata, err := encodeCheckpoint(m, runConfig, step)
	if err != nil {
		return errors.Wrapf(err, "save checkpoint %s", path)
	}
	return safefile.WriteFileAtomic(path, func(w io.Writer) error {
		return safetensors.Write(w, tensors, metadata)
	})
}

func encodeCheckpoint(m *Model, runConfig []byte, step int) ([]safetensors.Tensor, map[string]string, error) {
	if m == nil {
		return nil, nil, errors.New("model is nil")
	}
	if step < 0 {
		return nil, nil, errors.Errorf("step %d is negative", step)
	}
	cfg, err := modelConfigOf(runConfig)
	if err != nil {
		return nil, nil, err
	}
	if cfg != m.Config {
		return nil, nil, errors.Errorf("run config %s differs from the model's own config", configDiff(cfg, m.Config))
	}
	dtype, err := safetensorsDType(m.Dtype)
	if err != nil {
		return nil, nil, err
	}
	specs := m.Config.ParamSpecs()
	if len(m.Params) != len(specs) {
		return nil, nil, errors.Errorf("model has %d tensors, its config wants %d", len(m.Params), len(specs))
	}
	tensors := make([]safetensors.Tensor, len(specs))
	for i, spec := range specs {
		p := m.Params[i]
		if p.Name != spec.Name {
			return nil, nil, errors.Errorf("tensor %d is %q, want %q", i, p.Name, spec.Name)
		}
		if p.Value == nil {
			return nil, nil, errors.Errorf("tensor %q is nil", p.Name)
		}
		if !equalInts(p.Value.Shape(), spec.Shape) {
			return nil, nil, errors.Errorf("tensor %q has shape %v, want %v", p.Name, []int(p.Value.Shape()), spec.Shape)
		}
		if p.Value.Dtype() != m.Dtype {
			return nil, nil, errors.Errorf("tensor %q has dtype %v, the model %v", p.Name, p.Value.Dtype(), m.Dtype)
		}
		data, err := tensorBytes(p.Value, spec.Shape)
		if err != nil {
			return nil, nil, errors.Wrapf(err, "tensor %q", p.Name)
		}
		tensors[i] = safetensors.Tensor{Name: p.Name, DType: dtype, Shape: spec.Shape, Data: data}
	}
	metadata := map[string]string{
		metaConfig: string(runConfig),
		metaStep:   strconv.Itoa(step),
		metaFormat: CheckpointFormat,
	}
	return tensors, metadata, nil
}

// WeightsDigest is the hex SHA-256 of m's weights as Save writes them: each
// parameter's name, dtype, shape and little-endian bytes, in ParamSpecs
// order. Equal digests mean bit-identical weights; train stores it in an
// optimizer state file to bind the state to its checkpoint.
func WeightsDigest(m *Model) (string, error) {
	dtype, err := safetensorsDType(m.Dtype)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, p := range m.Params {
		shape := []int(p.Value.Shape())
		data, err := tensorBytes(p.Value, shape)
		if err != nil {
			return "", errors.Wrapf(err, "tensor %q", p.Name)
		}
		fmt.Fprintf(h, "%s\x00%s\x00%v\x00%d\x00", p.Name, dtype, shape, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

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
		for i, v := range data {
			if err := checkFinite(float64(v), shape, i); err != nil {
				return nil, err
			}
		}
		return safetensors.EncodeFloat32(data), nil
	case []float64:
		if len(data) != n {
			return nil, errors.Errorf("backing array holds %d values, shape %v needs %d", len(data), shape, n)
		}
		for i, v := range data {
			if err := checkFinite(v, shape, i); err != nil {
				return nil, err
			}
		}
		return safetensors.EncodeFloat64(data), nil
	default:
		return nil, errors.Errorf("holds %T, want []float32 or []float64", data)
	}
}

// checkFinite refuses NaN and Inf, naming where in the tensor it sits.
func checkFinite(v float64, shape []int, i int) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return errors.Errorf("value %v at %s is not finite", v, position(shape, i))
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

// modelConfigOf checks that runConfig is a JSON object with a "model" member
// holding exactly a valid Config, and returns that Config.
func modelConfigOf(runConfig []byte) (Config, error) {
	if err := uniqueKeys(runConfig); err != nil {
		return Config{}, errors.Wrap(err, "run config")
	}
	var run map[string]json.RawMessage
	if err := json.Unmarshal(runConfig, &run); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return Config{}, errors.Errorf("run config %s is not a JSON object", abbreviate(runConfig))
		}
		return Config{}, errors.Wrapf(err, "run config %s is not a JSON object", abbreviate(runConfig))
	}
	if run == nil {
		return Config{}, errors.New("run config is null, want a JSON object")
	}
	raw, ok := run["model"]
	if !ok {
		return Config{}, errors.New(`run config has no "model" member`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, errors.Wrapf(err, "run config \"model\" %s", abbreviate(raw))
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, errors.Wrap(err, "run config")
	}
	return cfg, nil
}

// uniqueKeys refuses JSON with a key twice in one object (at any depth), as
// the safetensors header refuses a tensor named twice: encoding/json would
// keep the last, so a checkpoint could say "copy" to one reader and
// "reverse" to another. Invalid JSON is left for the decoder to report.
func uniqueKeys(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return nil
				}
				name, _ := key.(string)
				if seen[name] {
					return errors.Errorf("key %s appears twice in %s", msg.Quote(name), path)
				}
				seen[name] = true
				if err := walk(path + "." + name); err != nil {
					return err
				}
			}
			_, _ = dec.Token() // '}'
		case json.Delim('['):
			for dec.More() {
				if err := walk(path + "[]"); err != nil {
					return err
				}
			}
			_, _ = dec.Token() // ']'
		}
		return nil
	}
	return walk("the config")
}

// abbreviate shortens JSON for an error message, keeping it on one line.
func abbreviate(raw []byte) string {
	const max = 60
	s := strings.Join(strings.Fields(string(raw)), " ")
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}

// configDiff names the first field (in JSON order) where got and want
// differ, as "model.dropout = 0.2 (model: 0.1)".
func configDiff(got, want Config) string {
	var g, w map[string]any
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	// Both unmarshal: they were just marshalled from a struct of plain fields.
	_ = json.Unmarshal(gb, &g)
	_ = json.Unmarshal(wb, &w)
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if g[k] != w[k] {
			return fmt.Sprintf("model.%s = %v (model: %v)", k, g[k], w[k])
		}
	}
	return fmt.Sprintf("model %+v (model: %+v)", got, want)
}

// MaxCheckpointLen is the largest checkpoint file Load reads (4 GiB). The
// largest model train accepts (rundir.MaxMemory) saves to well under 2 GiB;
// the limit keeps a wrong path from being read into memory.
const MaxCheckpointLen = 4 << 30

// Load reads and validates the checkpoint at path and returns the model it
// holds (Float32 for F32 tensors, Float64 for F64) and its metadata. Every
// check failure is one line naming the file and the problem: file size (at
// most MaxCheckpointLen), layout, format version, run config, each expected
// tensor present with the exact shape, one dtype throughout, no extra
// tensors, every value finite. Names, dtypes and shapes are checked from the
// header before any tensor data is read (safetensors.ReadFileChecked), so a
// huge file that does not hold its config's model costs only its header; it
// reads no more than the header describes plus one byte, and a pipe or a
// device such as /dev/zero is refused rather than read forever.
func Load(path string) (*Model, *CheckpointInfo, error) {
	tensors, metadata, err := safetensors.ReadFileChecked(path, MaxCheckpointLen, func(header []safetensors.Tensor, metadata map[string]string) error {
		_, _, _, err := checkLayout(header, metadata)
		return err
	})
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, errors.Wrapf(err, "checkpoint %s", path)
	}
	m, info, err := decodeTensors(tensors, metadata)
	if err != nil {
		return nil, nil, errors.Wrapf(err, "checkpoint %s", path)
	}
	return m, info, nil
}

// decodeCheckpoint is Load on the bytes of a file.
func decodeCheckpoint(data []byte) (*Model, *CheckpointInfo, error) {
	tensors, metadata, err := safetensors.Read(data)
	if err != nil {
		return nil, nil, err
	}
	return decodeTensors(tensors, metadata)
}

// decodeTensors validates a checkpoint's tensors and metadata against each
// other (checkLayout) and builds the model.
func decodeTensors(tensors []safetensors.Tensor, metadata map[string]string) (*Model, *CheckpointInfo, error) {
	info, cfg, dtype, err := checkLayout(tensors, metadata)
	if err != nil {
		return nil, nil, err
	}
	byName := make(map[string]safetensors.Tensor, len(tensors))
	for _, t := range tensors {
		byName[t.Name] = t
	}
	specs := cfg.ParamSpecs()
	m := &Model{Config: cfg, Dtype: dtype, Params: make([]Param, 0, len(specs))}
	for _, spec := range specs {
		value, err := denseFromBytes(dtype, spec.Shape, byName[spec.Name].Data)
		if err != nil {
			return nil, nil, errors.Wrapf(err, "tensor %q", spec.Name)
		}
		m.Params = append(m.Params, Param{Name: spec.Name, Value: value})
	}
	return m, info, nil
}

// checkLayout validates the metadata of a checkpoint and the names, dtypes
// and shapes of its tensors against the config the metadata holds, without
// looking at tensor data, so Load can refuse a file from its header alone.
// It returns the model dtype the tensors share.
func checkLayout(tensors []safetensors.Tensor, metadata map[string]string) (*CheckpointInfo, Config, tensor.Dtype, error) {
	info, cfg, err := decodeMetadata(metadata)
	if err != nil {
		return nil, Config{}, tensor.Dtype{}, err
	}
	// Every block has tensors of its own, so a file with fewer tensors than
	// blocks cannot match; checking first keeps a corrupt layer count from
	// making ParamSpecs list billions of names.
	if cfg.Layers > len(tensors) {
		return nil, Config{}, tensor.Dtype{}, errors.Errorf("config has model.layers=%d but the file holds only %d tensors", cfg.Layers, len(tensors))
	}
	byName := make(map[string]safetensors.Tensor, len(tensors))
	for _, t := range tensors {
		byName[t.Name] = t
	}
	var dtype tensor.Dtype
	var first, firstDType string
	for _, spec := range cfg.ParamSpecs() {
		t, ok := byName[spec.Name]
		if !ok {
			return nil, Config{}, tensor.Dtype{}, errors.Errorf("tensor %q is missing (%s)", spec.Name, explainPresence(cfg, spec.Name))
		}
		delete(byName, spec.Name)
		dt, ok := modelDTypes[t.DType]
		if !ok {
			return nil, Config{}, tensor.Dtype{}, errors.Errorf("tensor %q has dtype %s, want F32 or F64", spec.Name, t.DType)
		}
		if first == "" {
			dtype, first, firstDType = dt, spec.Name, t.DType
		} else if dt != dtype {
			return nil, Config{}, tensor.Dtype{}, errors.Errorf("tensor %q has dtype %s but %q has %s; all tensors must share one dtype",
				spec.Name, t.DType, first, firstDType)
		}
		if !equalInts(t.Shape, spec.Shape) {
			return nil, Config{}, tensor.Dtype{}, errors.Errorf("tensor %q has shape %v, want %v%s",
				spec.Name, t.Shape, spec.Shape, explainShape(cfg, spec, t.Shape))
		}
	}
	if len(byName) > 0 {
		for _, t := range tensors {
			if _, extra := byName[t.Name]; extra {
				return nil, Config{}, tensor.Dtype{}, errors.Errorf("unexpected tensor %s: not a parameter of the model its config describes (%d unexpected in all)",
					msg.Quote(t.Name), len(byName))
			}
		}
	}
	return info, cfg, dtype, nil
}

func decodeMetadata(metadata map[string]string) (*CheckpointInfo, Config, error) {
	format, ok := metadata[metaFormat]
	if !ok {
		return nil, Config{}, errors.Errorf("no %q metadata: not an attnscope checkpoint", metaFormat)
	}
	if format != CheckpointFormat {
		return nil, Config{}, errors.Errorf("format %s is not supported (want %q)", msg.Quote(format), CheckpointFormat)
	}
	for key := range metadata {
		if key != metaFormat && key != metaStep && key != metaConfig {
			return nil, Config{}, errors.Errorf("unexpected metadata key %s", msg.Quote(key))
		}
	}
	stepText, ok := metadata[metaStep]
	if !ok {
		return nil, Config{}, errors.Errorf("no %q metadata", metaStep)
	}
	step, err := strconv.Atoi(stepText)
	if err != nil || step < 0 || strconv.Itoa(step) != stepText {
		return nil, Config{}, errors.Errorf("metadata step %s is not a non-negative decimal integer", msg.Quote(stepText))
	}
	runConfig, ok := metadata[metaConfig]
	if !ok {
		return nil, Config{}, errors.Errorf("no %q metadata", metaConfig)
	}
	cfg, err := modelConfigOf([]byte(runConfig))
	if err != nil {
		return nil, Config{}, errors.Wrap(err, "metadata config")
	}
	info := &CheckpointInfo{RunConfig: json.RawMessage(runConfig), Step: step, Format: format}
	return info, cfg, nil
}

// modelDTypes maps the checkpoint dtypes to model dtypes.
var modelDTypes = map[string]tensor.Dtype{safetensors.F32: tensor.Float32, safetensors.F64: tensor.Float64}

func denseFromBytes(dtype tensor.Dtype, shape []int, data []byte) (*tensor.Dense, error) {
	if dtype == tensor.Float64 {
		values, err := safetensors.DecodeFloat64(data)
		if err != nil {
			return nil, err
		}
		for i, v := range values {
			if err := checkFinite(v, shape, i); err != nil {
				return nil, err
			}
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(values)), nil
	}
	values, err := safetensors.DecodeFloat32(data)
	if err != nil {
		return nil, err
	}
	for i, v := range values {
		if err := checkFinite(float64(v), shape, i); err != nil {
			return nil, err
		}
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(values)), nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

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
		return []string{d, d}
	case strings.HasSuffix(name, ".mlp.fc.weight"):
		return []string{f, d}
	case strings.HasSuffix(name, ".mlp.fc.bias"):
		return []string{f}
	case strings.HasSuffix(name, ".mlp.proj.weight"):
		return []string{d, f}
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
	case strings.Contains(name, ".ln1."), strings.Contains(name, ".ln2."),
		strings.Contains(name, ".mlp."), strings.HasPrefix(name, "ln_f."):
		return "expected since model.mlp=true"
	case strings.HasPrefix(name, "blocks."):
		return fmt.Sprintf("expected since model.layers=%d", cfg.Layers)
	}
	return "every model has it"
}
