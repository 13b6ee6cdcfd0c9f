package rundir

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/internal/safetensors/sttest"
)

var updateCheckpointGolden = flag.Bool("update-checkpoint-golden", false,
	"rewrite rundir/testdata/checkpoint_tiny.safetensors and the FuzzLoad seed corpus")

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
func ckRunConfig(cfg model.Config) Config {
	run := DefaultConfig()
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

// TestCheckpointRoundTrip: New -> SaveCheckpoint -> LoadCheckpoint gives
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
					if err := SaveCheckpoint(path, m, run, 1234); err != nil {
						t.Fatal(err)
					}
					got, err := LoadCheckpoint(path)
					if err != nil {
						t.Fatal(err)
					}
					if got.Model.Config != cfg || got.Step != 1234 || !reflect.DeepEqual(got.Config, run) {
						t.Errorf("loaded %+v at step %d, want %+v at 1234", got.Config, got.Step, run)
					}
					ckSameWeights(t, got.Model, m)
					again := filepath.Join(dir, "again.safetensors")
					if err := SaveCheckpoint(again, got.Model, got.Config, got.Step); err != nil {
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
		if err := SaveCheckpoint(path, m, ckRunConfig(cfg), 0); err != nil {
			t.Fatal(err)
		}
		got, err := LoadCheckpoint(path)
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
		t.Errorf("Save no longer writes %s byte for byte; if the format change is intended, bump CheckpointFormat and rerun with -update-checkpoint-golden", golden)
	}
	got, err := LoadCheckpoint(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.Step != 42 || !reflect.DeepEqual(got.Config, run) {
		t.Errorf("golden: step %d config %+v", got.Step, got.Config)
	}
	ckSameWeights(t, got.Model, m)
}

func ckGoldenConfig() (model.Config, Config) {
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
	type mutation func(m *model.Model) (Config, int)
	withRun := func(change func(r *Config)) mutation {
		return func(*model.Model) (Config, int) {
			r := ckRunConfig(cfg)
			change(&r)
			return r, 1
		}
	}
	setWeight := func(name string, i int, v float64) mutation {
		return func(m *model.Model) (Config, int) {
			graphtest.Set(m.Param(name), i, v)
			return run, 1
		}
	}
	cases := []struct {
		name   string
		mutate mutation
		want   string
	}{
		{"run config for another model", withRun(func(r *Config) { r.Model.Dropout = 0.2 }), "run config differs from the model's own config (model.dropout: run config 0.2, model 0.1)"},
		{"run config of another task", withRun(func(r *Config) { r.Task.Length = 9 }), "model.context = 5 does not match the sequence length of task repeat (9)"},
		{"run config with an invalid task", withRun(func(r *Config) { r.Task.Name = "spell" }), `task.name = "spell": unknown task`},
		{"negative step", func(*model.Model) (Config, int) { return run, -1 }, "step -1 is negative"},
		{"NaN weight", setWeight("blocks.1.attn.out.weight", 19, math.NaN()), `tensor "blocks.1.attn.out.weight": value NaN at index [2 3] (flat 19) is not finite`},
		{"Inf weight", setWeight("lm_head.bias", 6, math.Inf(-1)), `tensor "lm_head.bias": value -Inf at index [6] (flat 6) is not finite`},
		{"missing tensor", func(m *model.Model) (Config, int) { m.Params = m.Params[:len(m.Params)-1]; return run, 1 }, "model has 29 tensors, its config wants 30"},
		{"renamed tensor", func(m *model.Model) (Config, int) { m.Params[0].Name = "tok.weight"; return run, 1 }, `tensor 0 is "tok.weight", want "tok_emb.weight"`},
		{"wrong dtype tensor", func(m *model.Model) (Config, int) {
			m.Params[1].Value = ckDense(tensor.Float64, []int{5, 8}, make([]float64, 40))
			return run, 1
		}, `tensor "pos_emb.weight" has dtype float64, the model float32`},
		{"wrong shape tensor", func(m *model.Model) (Config, int) {
			m.Params[1].Value = ckDense(tensor.Float32, []int{8, 5}, make([]float64, 40))
			return run, 1
		}, `tensor "pos_emb.weight" has shape [8 5], want [5 8]`},
		{"unsupported model dtype", func(m *model.Model) (Config, int) { m.Dtype = tensor.Int; return run, 1 }, "model dtype int: only float32 and float64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "c.safetensors")
			m := ckNew(t, cfg, tensor.Float32, 2)
			runConfig, step := c.mutate(m)
			err := SaveCheckpoint(path, m, runConfig, step)
			if err == nil {
				t.Fatal("SaveCheckpoint accepted it")
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
		if err := SaveCheckpoint(filepath.Join(t.TempDir(), "c"), nil, run, 0); err == nil || !strings.Contains(err.Error(), "model is nil") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("refused save keeps the old file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.safetensors")
		m := ckNew(t, cfg, tensor.Float32, 2)
		if err := SaveCheckpoint(path, m, run, 1); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(path)
		graphtest.Set(m.Param("tok_emb.weight"), 0, math.NaN())
		if err := SaveCheckpoint(path, m, run, 2); err == nil {
			t.Fatal("SaveCheckpoint accepted a NaN weight")
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

// ckSaved is the file Save writes for m at step.
func ckSaved(t *testing.T, m *model.Model, run Config, step int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.safetensors")
	if err := SaveCheckpoint(path, m, run, step); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ckParts reads a file back into tensors and metadata so a test can change
// one thing and write it out again with ckAssemble.
func ckParts(t *testing.T, file []byte) ([]safetensors.Tensor, map[string]string) {
	t.Helper()
	tensors, meta, err := safetensors.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tensors {
		tensors[i].Data = bytes.Clone(tensors[i].Data)
	}
	return tensors, meta
}

func ckAssemble(t *testing.T, tensors []safetensors.Tensor, meta map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, tensors, meta); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestLoadRejects corrupts a valid checkpoint one way at a time and checks
// Load refuses it with a one-line error naming the file and the problem.
func TestLoadRejects(t *testing.T) {
	cfg := ckConfigs[1].cfg // 7 vocab, 5 context, d_model 8, d_ff 12, 2 layers, all biases
	run := ckRunConfig(cfg)
	m := ckNew(t, cfg, tensor.Float32, 4)
	base := ckSaved(t, m, run, 77)
	_, meta0 := ckParts(t, base)
	headerLen := int(binary.LittleEndian.Uint64(base))
	editTensors := func(edit func([]safetensors.Tensor) []safetensors.Tensor) []byte {
		tensors, meta := ckParts(t, base)
		return ckAssemble(t, edit(tensors), meta)
	}
	editMeta := func(edit func(map[string]string)) []byte {
		tensors, meta := ckParts(t, base)
		edit(meta)
		return ckAssemble(t, tensors, meta)
	}
	setValue := func(name string, i int, bits []byte) []byte {
		return editTensors(func(ts []safetensors.Tensor) []safetensors.Tensor {
			for k := range ts {
				if ts[k].Name == name {
					copy(ts[k].Data[i*len(bits):], bits)
				}
			}
			return ts
		})
	}
	withConfig := func(c model.Config) []byte {
		return editMeta(func(meta map[string]string) {
			b, _ := json.Marshal(ckRunConfig(c))
			meta["config"] = string(b)
		})
	}
	withRawConfig := func(raw string) []byte {
		return editMeta(func(meta map[string]string) { meta["config"] = raw })
	}
	withRun := func(change func(r *Config)) []byte {
		r := ckRunConfig(cfg)
		change(&r)
		b, _ := json.Marshal(r)
		return withRawConfig(string(b))
	}
	nanBits := safetensors.EncodeFloat32([]float32{float32(math.NaN())})
	infBits := safetensors.EncodeFloat32([]float32{float32(math.Inf(1))})
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"empty file", []byte{}, "file is 0 bytes, too short for the 8-byte header length"},
		{"truncated in the header length", base[:4], "file is 4 bytes, too short"},
		{"truncated in the header", base[:8+headerLen/2], "exceeds the"},
		{"truncated in the data", base[:len(base)-5], `tensor "lm_head.bias": data_offsets [4928 4956] run past the end of the 4951-byte data section (truncated file?)`},
		{"truncated to the header", base[:8+headerLen], "run past the end of the 0-byte data section (truncated file?)"},
		{"header length beyond the file", append(binary.LittleEndian.AppendUint64(nil, uint64(len(base))), base[8:]...), "truncated file?"},
		{"header not JSON", append(append(binary.LittleEndian.AppendUint64(nil, 8), "{oops!} "...), base[8+headerLen:]...), "header: invalid JSON: invalid character"},
		{"not a safetensors file", []byte("# a YAML config, not a checkpoint\nseed: 1\n"), "header length"},
		{"overlapping offsets", sttest.EditHeader(t, base, func(h map[string]any) {
			b, e := sttest.Offsets(h, "pos_emb.weight")
			sttest.Entry(h, "pos_emb.weight")["data_offsets"] = []float64{b - 4, e - 4}
		}), `tensor "pos_emb.weight": data_offsets [220 380] overlap tensor "tok_emb.weight" [0 224]`},
		{"offsets beyond the data", sttest.EditHeader(t, base, func(h map[string]any) {
			b, e := sttest.Offsets(h, "lm_head.bias")
			sttest.Entry(h, "lm_head.bias")["data_offsets"] = []float64{b + 8, e + 8}
		}), `tensor "lm_head.bias": data_offsets`},
		{"gap in the data", sttest.EditHeader(t, base, func(h map[string]any) {
			delete(h, "pos_emb.weight")
		}), "leave data bytes [224, 384) covered by no tensor"},
		{"unknown dtype", sttest.EditHeader(t, base, func(h map[string]any) {
			sttest.Entry(h, "blocks.0.ln1.weight")["dtype"] = "F33"
		}), `tensor "blocks.0.ln1.weight": unknown dtype "F33"`},
		{"integer dtype", sttest.EditHeader(t, base, func(h map[string]any) {
			sttest.Entry(h, "blocks.0.ln1.weight")["dtype"] = "I32"
		}), `tensor "blocks.0.ln1.weight" has dtype I32, want F32 or F64`},
		{"mixed dtypes", editTensors(func(ts []safetensors.Tensor) []safetensors.Tensor {
			v, _ := safetensors.DecodeFloat32(ts[3].Data)
			wide := make([]float64, len(v))
			for i := range v {
				wide[i] = float64(v[i])
			}
			ts[3].DType, ts[3].Data = "F64", safetensors.EncodeFloat64(wide)
			return ts
		}), `tensor "blocks.0.ln1.bias" has dtype F64 but "tok_emb.weight" has F32; all tensors must share one dtype`},
		{"wrong shape", editTensors(func(ts []safetensors.Tensor) []safetensors.Tensor {
			for k := range ts {
				if ts[k].Name == "blocks.0.attn.qkv.weight" {
					ts[k].Shape, ts[k].Data = []int{24, 7}, ts[k].Data[:24*7*4]
				}
			}
			return ts
		}), `tensor "blocks.0.attn.qkv.weight" has shape [24 7], want [24 8] (dim 1 is model.d_model=8)`},
		{"wrong rank", editTensors(func(ts []safetensors.Tensor) []safetensors.Tensor {
			for k := range ts {
				if ts[k].Name == "blocks.1.mlp.fc.bias" {
					ts[k].Shape = []int{3, 4}
				}
			}
			return ts
		}), `tensor "blocks.1.mlp.fc.bias" has shape [3 4], want [12]`},
		{"missing tensor", editTensors(func(ts []safetensors.Tensor) []safetensors.Tensor {
			var kept []safetensors.Tensor
			for _, x := range ts {
				if x.Name != "blocks.1.attn.qkv.bias" {
					kept = append(kept, x)
				}
			}
			return kept
		}), `tensor "blocks.1.attn.qkv.bias" is missing (expected since model.qkv_bias=true)`},
		{"extra tensor", editTensors(func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, safetensors.Tensor{Name: "blocks.2.attn.qkv.weight", DType: "F32", Shape: []int{1}, Data: make([]byte, 4)})
		}), `unexpected tensor "blocks.2.attn.qkv.weight": not a parameter of the model its config describes (1 unexpected in all)`},
		{"NaN weight", setValue("blocks.1.mlp.proj.weight", 13, nanBits), `tensor "blocks.1.mlp.proj.weight": value NaN at index [1 1] (flat 13) is not finite`},
		{"Inf weight", setValue("ln_f.bias", 7, infBits), `tensor "ln_f.bias": value +Inf at index [7] (flat 7) is not finite`},
		{"config missing", editMeta(func(meta map[string]string) { delete(meta, "config") }), `no "config" metadata`},
		{"config not JSON", withRawConfig("seed: 1"), `metadata config: run config "seed: 1": invalid character 's'`},
		{"config without model", withRawConfig(`{"seed": 1}`), `metadata config: model.vocab = 0: must be positive`},
		{"config nested deep", withRawConfig(strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000)), "metadata config: the run config is 2000000 bytes, more than the 1048576"},
		{"config nested deep and short", withRawConfig(`{"task":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`), "metadata config: run config: the config nests deeper than 8 levels"},
		{"config key twice", withRawConfig(`{"task":{"name":"copy","name":"repeat"}}`), `metadata config: run config: key "name" appears twice in the config.task`},
		{"config with two values", withRawConfig(`{"seed":1} {"seed":2}`), "more than one JSON value"},
		{"config with an invalid task and a NaN weight", func() []byte {
			b, _ := json.Marshal(func() Config { r := ckRunConfig(cfg); r.Task.Name = "spell"; return r }())
			file := setValue("tok_emb.weight", 0, nanBits)
			tensors, meta := ckParts(t, file)
			meta["config"] = string(b)
			return ckAssemble(t, tensors, meta)
		}(), `metadata config: task.name = "spell": unknown task`},
		{"config of another task", withRun(func(r *Config) { r.Task.Symbols = 9 }), "model.vocab = 7 does not match the vocabulary of task repeat (9)"},
		{"config with unknown model field", editMeta(func(meta map[string]string) {
			meta["config"] = strings.Replace(meta["config"], `"vocab"`, `"vocab_size":7,"vocab"`, 1)
		}), `unknown field "vocab_size"`},
		{"invalid model config", withConfig(model.Config{Vocab: 7, Context: 5, DModel: 8, Heads: 3, Layers: 2}), "model.d_model = 8 is not divisible by model.heads = 3"},
		{"config of another model", withConfig(model.Config{Vocab: 7, Context: 5, DModel: 16, Heads: 2, Layers: 2, MLP: true, DFF: 12, QKVBias: true, OutBias: true, LMBias: true}),
			`tensor "tok_emb.weight" has shape [7 8], want [7 16] (dim 1 is model.d_model=16)`},
		{"absurd layer count", withConfig(model.Config{Vocab: 7, Context: 5, DModel: 8, Heads: 2, Layers: 1 << 40}),
			"config has model.layers=1099511627776 but the file holds only 30 tensors"},
		{"config without biases", withConfig(model.Config{Vocab: 7, Context: 5, DModel: 8, Heads: 2, Layers: 2, MLP: true, DFF: 12}),
			`unexpected tensor "blocks.0.attn.qkv.bias"`},
		{"format missing", editMeta(func(meta map[string]string) { delete(meta, "format") }), `no "format" metadata: not an attnscope checkpoint`},
		{"format from the future", editMeta(func(meta map[string]string) { meta["format"] = "attnscope/2" }), `format "attnscope/2" is not supported (want "attnscope/1")`},
		{"step missing", editMeta(func(meta map[string]string) { delete(meta, "step") }), `no "step" metadata`},
		{"step negative", editMeta(func(meta map[string]string) { meta["step"] = "-1" }), `metadata step "-1" is not a non-negative decimal integer`},
		{"step not decimal", editMeta(func(meta map[string]string) { meta["step"] = "0x10" }), `metadata step "0x10"`},
		{"step padded", editMeta(func(meta map[string]string) { meta["step"] = "077" }), `metadata step "077"`},
		{"extra metadata", editMeta(func(meta map[string]string) { meta["note"] = "hi" }), `unexpected metadata key "note"`},
		{"no metadata", editMeta(func(meta map[string]string) { clear(meta) }), `no "format" metadata`},
	}
	if meta0["step"] != "77" {
		t.Fatalf("base metadata %q", meta0)
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".safetensors")
			if err := os.WriteFile(path, c.file, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadCheckpoint(path)
			if err == nil {
				t.Fatalf("LoadCheckpoint accepted it: %+v", got.Config)
			}
			prefix := "checkpoint " + path + ": "
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q\nwant one line starting %q containing %q", msg, prefix, c.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(dir, "nope.safetensors")
		_, err := LoadCheckpoint(path)
		if err == nil || err.Error() != "checkpoint "+path+": no such file or directory" {
			t.Errorf("error %v", err)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("errors.Is(%v, fs.ErrNotExist) is false; train's resume needs it", err)
		}
	})
}

// TestLoadBoundedRead: Load refuses input that never ends or is absurdly
// large without reading it whole: /dev/zero (not a regular file) at once, and a file over MaxCheckpointLen (sparse, so the test writes
// nothing) by its size.
func TestLoadBoundedRead(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err := LoadCheckpoint("/dev/zero")
		if want := "checkpoint /dev/zero: is a character device, not a regular file"; err == nil || err.Error() != want {
			t.Errorf("/dev/zero: error %v, want %s", err, want)
		}
	}
	path := filepath.Join(t.TempDir(), "huge.safetensors")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Truncate(MaxCheckpointLen + 1)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		t.Skipf("cannot make a sparse file of %d bytes: %v", int64(MaxCheckpointLen+1), err)
	}
	_, err = LoadCheckpoint(path)
	if want := fmt.Sprintf("checkpoint %s: file is 4294967297 bytes, larger than the 4294967296-byte limit", path); err == nil || err.Error() != want {
		t.Errorf("huge file: error %v, want %s", err, want)
	}
}

// ckFuzzFile is the go test fuzz v1 encoding of one []byte input.
func ckFuzzFile(data []byte) []byte {
	return []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data))
}

// ckFuzzSeeds are the committed FuzzLoad seeds, derived from the golden
// checkpoint: the file itself, truncations, and one semantic fault each.
func ckFuzzSeeds(t *testing.T, golden []byte) map[string][]byte {
	headerLen := int(binary.LittleEndian.Uint64(golden))
	tensors, meta := ckParts(t, golden)
	nan := ckAssemble(t, tensors, meta)
	copy(nan[len(nan)-4:], safetensors.EncodeFloat32([]float32{float32(math.NaN())}))
	nan = sttest.Reseal(t, nan)
	noFormat := map[string]string{"config": meta["config"], "step": meta["step"]}
	return map[string][]byte{
		"golden":           golden,
		"truncated-header": golden[:8+headerLen/2],
		"truncated-data":   golden[:len(golden)-6],
		"nan-weight":       nan,
		"no-format":        ckAssemble(t, tensors, noFormat),
		"missing-tensor":   ckAssemble(t, tensors[1:], meta),
	}
}

// ckDecode is LoadCheckpoint on the bytes of a file, written to dir.
func ckDecode(dir string, file []byte) (*Checkpoint, error) {
	path := filepath.Join(dir, "fuzz.safetensors")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		return nil, err
	}
	return LoadCheckpoint(path)
}

// FuzzLoad checks that no file panics the checkpoint decoder, and that a
// model it accepts saves back to a file that decodes to the same model.
func FuzzLoad(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "checkpoint_tiny.safetensors"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Fuzz(func(t *testing.T, file []byte) {
		dir := t.TempDir()
		ck, err := ckDecode(dir, file)
		if err != nil {
			return
		}
		tensors, meta, err := encodeCheckpoint(ck.Model, ck.Config, ck.Step)
		if err != nil {
			t.Fatalf("SaveCheckpoint would refuse what LoadCheckpoint accepted: %v", err)
		}
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, tensors, meta); err != nil {
			t.Fatal(err)
		}
		again, err := ckDecode(dir, buf.Bytes())
		if err != nil {
			t.Fatalf("LoadCheckpoint refuses what SaveCheckpoint wrote: %v", err)
		}
		if !reflect.DeepEqual(again.Config, ck.Config) || again.Step != ck.Step {
			t.Fatalf("round trip changed config or step")
		}
		ckSameWeights(t, again.Model, ck.Model)
	})
}

// TestConfigDuplicateKeys: a checkpoint whose config JSON names a key twice
// (the last would win: a copy model shown as reverse) is refused, at the
// top level and inside a member, and JSON nested past the bound is refused
// before it is decoded (a million brackets once took all the memory).
func TestConfigDuplicateKeys(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{`{"task":{"name":"copy"},"task":{"name":"reverse"},"model":{}}`, `key "task" appears twice in the config`},
		{`{"model":{"heads":2,"heads":4}}`, `key "heads" appears twice in the config.model`},
		{`{"task":{"file":{"path":"a","path":"b"}}}`, `key "path" appears twice in the config.task.file`},
		{`{"train":{"eval_lengths":[1,2]},"x":[{"a":1,"a":2}]}`, `key "a" appears twice in the config.x[]`},
		{`{"task":{"file":{"path":[[[[[[1]]]]]]}}}`, "the config nests deeper than 8 levels"},
	} {
		if _, err := decodeConfigJSON([]byte(c.raw)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.raw, err, c.want)
		}
	}
}

// TestLoadSealed: a checkpoint carries the SHA-256 of its tensor data; one
// flipped bit anywhere in it is refused with one line naming the file, and
// a checkpoint written before the digest was kept still loads, unsealed.
func TestLoadSealed(t *testing.T) {
	cfg := ckConfigs[1].cfg
	m := ckNew(t, cfg, tensor.Float32, 4)
	good := ckSaved(t, m, ckRunConfig(cfg), 3)
	dir := t.TempDir()
	write := func(name string, file []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ck, err := LoadCheckpoint(write("good.safetensors", good))
	if err != nil || !ck.Sealed {
		t.Fatalf("a fresh checkpoint: %v, sealed %v", err, ck != nil && ck.Sealed)
	}
	header, data := sttest.Split(t, good)
	start := len(good) - len(data)
	for _, at := range []int{start, start + len(data)/2, len(good) - 1} {
		flipped := bytes.Clone(good)
		flipped[at] ^= 0x10
		path := write(fmt.Sprintf("flipped-%d.safetensors", at), flipped)
		_, err := LoadCheckpoint(path)
		want := "checkpoint " + path + ": tensor data does not match its data_sha256"
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("a bit flipped at byte %d of %d: %v, want a line starting %q", at, len(good), err, want)
		}
	}
	delete(header["__metadata__"].(map[string]any), safetensors.DigestKey)
	old, err := LoadCheckpoint(write("old.safetensors", sttest.Join(t, header, data)))
	if err != nil || old.Sealed {
		t.Fatalf("a checkpoint without a digest: %v, sealed %v", err, old != nil && old.Sealed)
	}
	ckSameWeights(t, old.Model, m)
}

// TestLoadHoldsTheTensorsOnce: loading a checkpoint allocates its float32
// tensors once, plus the reader's one chunk (1 MiB) and small change:
// never a copy of the file's data section beside the values.
func TestLoadHoldsTheTensorsOnce(t *testing.T) {
	cfg := model.Config{Vocab: 64, Context: 64, DModel: 256, Heads: 4, Layers: 4, MLP: true, DFF: 1024, OutBias: true, Attention: "fused"}
	m := ckNew(t, cfg, tensor.Float32, 1)
	path := filepath.Join(t.TempDir(), "c.safetensors")
	if err := SaveCheckpoint(path, m, ckRunConfig(cfg), 0); err != nil {
		t.Fatal(err)
	}
	tensorBytes := 0
	for _, p := range m.Params {
		tensorBytes += 4 * p.Value.Shape().TotalSize()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := LoadCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	allocated := int(after.TotalAlloc - before.TotalAlloc)
	if limit := tensorBytes + 3<<20/2; allocated > limit {
		t.Errorf("loading %d bytes of tensors allocated %d bytes (limit %d)", tensorBytes, allocated, limit)
	}
}
