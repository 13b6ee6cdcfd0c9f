package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

var updateCheckpointGolden = flag.Bool("update-checkpoint-golden", false,
	"rewrite checkpoint/testdata/checkpoint_tiny.safetensors and the FuzzLoad seed corpus")

// ckConfigs are the architectures the checkpoint tests cover: attention-only
// and full-MLP with every bias on, and a bare attention-only one.
var ckConfigs = []struct {
	name string
	cfg  model.Config
}{
	{"attn-only-biases", model.Config{Vocab: 7, Context: 5, DModel: 8, Heads: 2, Layers: 2, QKVBias: true, OutBias: true, LMBias: true}},
	{"mlp-biases", model.Config{Vocab: 7, Context: 5, DModel: 8, Heads: 2, Layers: 2, MLP: true, DFF: 12,
		QKVBias: true, OutBias: true, LMBias: true, Dropout: 0.1}},
	{"attn-only-bare", model.Config{Vocab: 5, Context: 3, DModel: 4, Heads: 1, Layers: 1}},
}

// ckRunConfig is a run config for a model of cfg, as train would write it:
// a repeat task of cfg's vocabulary and context.
func ckRunConfig(cfg model.Config) rundir.Config {
	run := rundir.DefaultConfig()
	run.Seed = 7
	run.Task = data.TaskConfig{Name: "repeat", Length: cfg.Context, Symbols: cfg.Vocab}
	run.Model = cfg
	return run
}

// ckDense builds a tensor of the given dtype from float64 values.
func ckDense(dtype tensor.Dtype, shape []int, values []float64) *tensor.Dense {
	d := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(values))
	if dtype == tensor.Float32 {
		return graphtest.ToF32(d)
	}
	return d
}

// ckRandomize overwrites every weight of m with N(0, 0.25) draws from seed,
// so that no two tensors hold the same values.
func ckRandomize(m *model.Model, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	for _, p := range m.Params {
		for i := range p.Value.Shape().TotalSize() {
			graphtest.Set(p.Value, i, rng.NormFloat64()*0.5)
		}
	}
}

// ckTail is the product of a shape's dimensions after the first.
func ckTail(shape []int) int {
	n := 1
	for _, d := range shape[1:] {
		n *= d
	}
	return n
}

func ckNew(t *testing.T, cfg model.Config, dtype tensor.Dtype, seed uint64) *model.Model {
	t.Helper()
	m, err := model.New(cfg, dtype, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ckBits returns the bit patterns of t's values in logical row-major order,
// read element by element through At so views are handled independently of
// Save's own code path.
func ckBits(t *testing.T, d *tensor.Dense) []uint64 {
	t.Helper()
	shape := d.Shape().Clone()
	coords := make([]int, len(shape))
	var bits []uint64
	for i := 0; i < shape.TotalSize(); i++ {
		rest := i
		for k := len(shape) - 1; k >= 0; k-- {
			coords[k] = rest % shape[k]
			rest /= shape[k]
		}
		v, err := d.At(coords...)
		if err != nil {
			t.Fatal(err)
		}
		switch v := v.(type) {
		case float32:
			bits = append(bits, uint64(math.Float32bits(v)))
		case float64:
			bits = append(bits, math.Float64bits(v))
		default:
			t.Fatalf("value of type %T", v)
		}
	}
	return bits
}

// ckSameWeights fails unless got holds exactly want's tensors, bit for bit.
func ckSameWeights(t *testing.T, got, want *model.Model) {
	t.Helper()
	if got.Dtype != want.Dtype {
		t.Errorf("dtype %v, want %v", got.Dtype, want.Dtype)
	}
	if len(got.Params) != len(want.Params) {
		t.Fatalf("%d tensors, want %d", len(got.Params), len(want.Params))
	}
	for i, w := range want.Params {
		g := got.Params[i]
		if g.Name != w.Name || !reflect.DeepEqual(g.Value.Shape(), w.Value.Shape()) || g.Value.Dtype() != w.Value.Dtype() {
			t.Errorf("tensor %d: %q %v %v, want %q %v %v", i, g.Name, g.Value.Shape(), g.Value.Dtype(), w.Name, w.Value.Shape(), w.Value.Dtype())
			continue
		}
		if !reflect.DeepEqual(ckBits(t, g.Value), ckBits(t, w.Value)) {
			t.Errorf("tensor %q: values differ", w.Name)
		}
	}
}

// TestCheckpointRoundTrip: New -> Save -> Load gives
// the same run config, step and bit-identical weights, on either path and
// dtype, and saving the loaded model again reproduces the file byte for
// byte.
func TestCheckpointRoundTrip(t *testing.T) {
	for _, attention := range layers.Paths {
		for _, c := range ckConfigs {
			for _, dtype := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
				t.Run(string(attention)+"/"+c.name+"/"+dtype.String(), func(t *testing.T) {
					dir := t.TempDir()
					path := filepath.Join(dir, "checkpoint.safetensors")
					cfg := c.cfg
					cfg.Attention = string(attention)
					m := ckNew(t, cfg, dtype, 11)
					ckRandomize(m, 5)
					run := ckRunConfig(cfg)
					if err := Save(path, m, run, 1234); err != nil {
						t.Fatal(err)
					}
					got, err := Load(path)
					if err != nil {
						t.Fatal(err)
					}
					if got.Model.Config != cfg || got.Step != 1234 || !reflect.DeepEqual(got.Config, run) {
						t.Errorf("loaded %+v at step %d, want %+v at 1234", got.Config, got.Step, run)
					}
					ckSameWeights(t, got.Model, m)
					again := filepath.Join(dir, "again.safetensors")
					if err := Save(again, got.Model, got.Config, got.Step); err != nil {
						t.Fatal(err)
					}
					a, _ := os.ReadFile(path)
					b, _ := os.ReadFile(again)
					if !bytes.Equal(a, b) {
						t.Error("saving the loaded model does not reproduce the file")
					}
				})
			}
		}
	}
}

// TestCheckpointLayout reads a saved file with nothing but encoding/binary,
// encoding/json and crypto/sha256 and checks, element by element, that every
// tensor is where ParamSpecs says, in PyTorch row-major layout, with the
// expected metadata (the digest of the data among it).
func TestCheckpointLayout(t *testing.T) {
	cfg := ckConfigs[1].cfg
	for _, dtype := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		m := ckNew(t, cfg, dtype, 3)
		run := ckRunConfig(cfg)
		raw := ckSaved(t, m, run, 9)
		n := binary.LittleEndian.Uint64(raw)
		var header map[string]json.RawMessage
		if err := json.Unmarshal(raw[8:8+n], &header); err != nil {
			t.Fatal(err)
		}
		var meta map[string]string
		if err := json.Unmarshal(header["__metadata__"], &meta); err != nil {
			t.Fatal(err)
		}
		runJSON, err := json.Marshal(run)
		if err != nil {
			t.Fatal(err)
		}
		data := raw[8+n:]
		digest := sha256.Sum256(data)
		want := map[string]string{"config": string(runJSON), "step": "9", "format": "attnscope/1", safetensors.DigestKey: hex.EncodeToString(digest[:])}
		if !reflect.DeepEqual(meta, want) {
			t.Errorf("metadata %q, want %q", meta, want)
		}
		size, name := 4, "F32"
		if dtype == tensor.Float64 {
			size, name = 8, "F64"
		}
		specs := cfg.ParamSpecs()
		if len(header) != len(specs)+1 {
			t.Errorf("header has %d entries, want %d tensors + metadata", len(header), len(specs))
		}
		offset := 0
		for _, spec := range specs {
			var e struct {
				DType   string `json:"dtype"`
				Shape   []int  `json:"shape"`
				Offsets [2]int `json:"data_offsets"`
			}
			if err := json.Unmarshal(header[spec.Name], &e); err != nil {
				t.Fatalf("%s: %v", spec.Name, err)
			}
			count := spec.Shape[0] * ckTail(spec.Shape)
			if e.DType != name || !reflect.DeepEqual(e.Shape, spec.Shape) || e.Offsets != [2]int{offset, offset + count*size} {
				t.Errorf("%s: %+v, want %s %v [%d %d]", spec.Name, e, name, spec.Shape, offset, offset+count*size)
				continue
			}
			want := ckBits(t, m.Param(spec.Name))
			for i := 0; i < count; i++ {
				at := data[offset+i*size:]
				var got uint64
				if size == 4 {
					got = uint64(binary.LittleEndian.Uint32(at))
				} else {
					got = binary.LittleEndian.Uint64(at)
				}
				if got != want[i] {
					t.Fatalf("%s element %d: bits %x in file, %x in model", spec.Name, i, got, want[i])
				}
			}
			offset += count * size
		}
		if offset != len(data) {
			t.Errorf("data section is %d bytes, tensors cover %d", len(data), offset)
		}
	}
}

// TestSaveMaterializesViews saves weights that are a transposed tensor and a
// non-contiguous slice (whose backing arrays are not in row-major order) and
// checks the file holds their logical values.
func TestSaveMaterializesViews(t *testing.T) {
	cfg := ckConfigs[0].cfg
	for _, dtype := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		m := ckNew(t, cfg, dtype, 5)
		d := cfg.DModel
		values := make([]float64, 3*d*(d+3))
		for i := range values {
			values[i] = float64(i) / 8
		}
		transposed := ckDense(dtype, []int{d, 3 * d}, values[:3*d*d])
		if err := transposed.T(); err != nil { // (3D, D) view of a (D, 3D) array
			t.Fatal(err)
		}
		wide := ckDense(dtype, []int{d, d + 3}, values[:d*(d+3)])
		view, err := wide.Slice(nil, tensor.S(1, d+1)) // (D, D) columns 1..D of a (D, D+3) array
		if err != nil {
			t.Fatal(err)
		}
		sliced := view.(*tensor.Dense)
		if !transposed.RequiresIterator() || !sliced.RequiresIterator() {
			t.Fatal("test tensors are contiguous; they would not exercise materialisation")
		}
		for i, p := range m.Params {
			switch p.Name {
			case "blocks.0.attn.qkv.weight":
				m.Params[i].Value = transposed
			case "blocks.0.attn.out.weight":
				m.Params[i].Value = sliced
			}
		}
		path := filepath.Join(t.TempDir(), "c.safetensors")
		if err := Save(path, m, ckRunConfig(cfg), 0); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		ckSameWeights(t, got.Model, m)
	}
}

// TestCheckpointGolden pins the exact bytes of a tiny checkpoint (format
// stability across versions; the same file was loaded into a PyTorch module
// with load_state_dict(strict=True) by
// internal/safetensors/testdata/check_attnscope.py) and that it loads back to
// the weights New draws.
func TestCheckpointGolden(t *testing.T) {
	golden := filepath.Join("testdata", "checkpoint_tiny.safetensors")
	cfg, run := ckGoldenConfig()
	m := ckNew(t, cfg, tensor.Float32, 1)
	saved := ckSaved(t, m, run, 42)
	seedDir := filepath.Join("testdata", "fuzz", "FuzzLoad")
	if *updateCheckpointGolden {
		if err := os.WriteFile(golden, saved, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(seedDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, seed := range ckFuzzSeeds(t, saved) {
			if err := os.WriteFile(filepath.Join(seedDir, name), ckFuzzFile(seed), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, seed := range ckFuzzSeeds(t, saved) {
		got, err := os.ReadFile(filepath.Join(seedDir, name))
		if err != nil || !bytes.Equal(got, ckFuzzFile(seed)) {
			t.Errorf("FuzzLoad seed %s is missing or stale (err %v); rerun with -update-checkpoint-golden", name, err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(saved, want) {
		t.Errorf("Save no longer writes %s byte for byte; if the format change is intended, bump Format and rerun with -update-checkpoint-golden", golden)
	}
	got, err := Load(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.Step != 42 || !reflect.DeepEqual(got.Config, run) {
		t.Errorf("golden: step %d config %+v", got.Step, got.Config)
	}
	ckSameWeights(t, got.Model, m)
}

func ckGoldenConfig() (model.Config, rundir.Config) {
	cfg := model.Config{Vocab: 5, Context: 4, DModel: 4, Heads: 2, Layers: 1, MLP: true, DFF: 8, QKVBias: true, OutBias: true, LMBias: true, Attention: "fused"}
	run := ckRunConfig(cfg)
	run.Seed = 1
	return cfg, run
}

// TestSaveRejects: every refused save names the file and the problem,
// creates nothing, and a refused save over an existing checkpoint leaves it
// intact.
func TestSaveRejects(t *testing.T) {
	cfg := ckConfigs[1].cfg
	run := ckRunConfig(cfg)
	type mutation func(m *model.Model) (rundir.Config, int)
	withRun := func(change func(r *rundir.Config)) mutation {
		return func(*model.Model) (rundir.Config, int) {
			r := ckRunConfig(cfg)
			change(&r)
			return r, 1
		}
	}
	setWeight := func(name string, i int, v float64) mutation {
		return func(m *model.Model) (rundir.Config, int) {
			graphtest.Set(m.Param(name), i, v)
			return run, 1
		}
	}
	cases := []struct {
		name   string
		mutate mutation
		want   string
	}{
		{"run config for another model", withRun(func(r *rundir.Config) { r.Model.Dropout = 0.2 }), "run config differs from the model's own config (model.dropout: run config 0.2, model 0.1)"},
		{"run config of another task", withRun(func(r *rundir.Config) { r.Task.Length = 9 }), "model.context = 5 does not match the sequence length of task repeat (9)"},
		{"run config with an invalid task", withRun(func(r *rundir.Config) { r.Task.Name = "spell" }), `task.name = "spell": unknown task`},
		{"negative step", func(*model.Model) (rundir.Config, int) { return run, -1 }, "step -1 is negative"},
		{"NaN weight", setWeight("blocks.1.attn.out.weight", 19, math.NaN()), `tensor "blocks.1.attn.out.weight": value NaN at index [2 3] (flat 19) is not finite`},
		{"Inf weight", setWeight("lm_head.bias", 6, math.Inf(-1)), `tensor "lm_head.bias": value -Inf at index [6] (flat 6) is not finite`},
		{"missing tensor", func(m *model.Model) (rundir.Config, int) { m.Params = m.Params[:len(m.Params)-1]; return run, 1 }, "model has 29 tensors, its config wants 30"},
		{"renamed tensor", func(m *model.Model) (rundir.Config, int) { m.Params[0].Name = "tok.weight"; return run, 1 }, `tensor 0 is "tok.weight", want "tok_emb.weight"`},
		{"wrong dtype tensor", func(m *model.Model) (rundir.Config, int) {
			m.Params[1].Value = ckDense(tensor.Float64, []int{5, 8}, make([]float64, 40))
			return run, 1
		}, `tensor "pos_emb.weight" has dtype float64, the model float32`},
		{"wrong shape tensor", func(m *model.Model) (rundir.Config, int) {
			m.Params[1].Value = ckDense(tensor.Float32, []int{8, 5}, make([]float64, 40))
			return run, 1
		}, `tensor "pos_emb.weight" has shape [8 5], want [5 8]`},
		{"unsupported model dtype", func(m *model.Model) (rundir.Config, int) { m.Dtype = tensor.Int; return run, 1 }, "model dtype int: only float32 and float64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "c.safetensors")
			m := ckNew(t, cfg, tensor.Float32, 2)
			runConfig, step := c.mutate(m)
			err := Save(path, m, runConfig, step)
			if err == nil {
				t.Fatal("Save accepted it")
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "save checkpoint "+path+": ") || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q\nwant one line starting %q containing %q", msg, "save checkpoint "+path+": ", c.want)
			}
			if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 0 {
				t.Errorf("refused save left %q behind", names)
			}
		})
	}
	t.Run("nil model", func(t *testing.T) {
		if err := Save(filepath.Join(t.TempDir(), "c"), nil, run, 0); err == nil || !strings.Contains(err.Error(), "model is nil") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("refused save keeps the old file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.safetensors")
		m := ckNew(t, cfg, tensor.Float32, 2)
		if err := Save(path, m, run, 1); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(path)
		graphtest.Set(m.Param("tok_emb.weight"), 0, math.NaN())
		if err := Save(path, m, run, 2); err == nil {
			t.Fatal("Save accepted a NaN weight")
		}
		after, _ := os.ReadFile(path)
		if !bytes.Equal(before, after) {
			t.Error("refused save changed the existing checkpoint")
		}
		if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 1 {
			t.Errorf("directory holds %q, want only the checkpoint", names)
		}
	})
}
