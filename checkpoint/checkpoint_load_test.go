package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/internal/safetensors/sttest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// ckSaved is the file Save writes for m at step.
func ckSaved(t *testing.T, m *model.Model, run rundir.Config, step int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.safetensors")
	if err := Save(path, m, run, step); err != nil {
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
	withConfig := func(c model.Config) []byte {
		return editMeta(func(meta map[string]string) {
			b, _ := json.Marshal(ckRunConfig(c))
			meta["config"] = string(b)
		})
	}
	withRawConfig := func(raw string) []byte {
		return editMeta(func(meta map[string]string) { meta["config"] = raw })
	}
	withRun := func(change func(r *rundir.Config)) []byte {
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
		{"overlapping offsets", sttest.ShiftOffsets(t, base, "pos_emb.weight", -4), `tensor "pos_emb.weight": data_offsets [220 380] overlap tensor "tok_emb.weight" [0 224]`},
		{"offsets beyond the data", sttest.ShiftOffsets(t, base, "lm_head.bias", 8), `tensor "lm_head.bias": data_offsets`},
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
		{"NaN weight", sttest.SetElement(t, base, "blocks.1.mlp.proj.weight", 13, nanBits), `tensor "blocks.1.mlp.proj.weight": value NaN at index [1 1] (flat 13) is not finite`},
		{"Inf weight", sttest.SetElement(t, base, "ln_f.bias", 7, infBits), `tensor "ln_f.bias": value +Inf at index [7] (flat 7) is not finite`},
		{"config missing", editMeta(func(meta map[string]string) { delete(meta, "config") }), `no "config" metadata`},
		{"config not JSON", withRawConfig("seed: 1"), `metadata config: run config "seed: 1": invalid character 's'`},
		{"config without model", withRawConfig(`{"seed": 1}`), `metadata config: model.vocab = 0: must be positive`},
		{"config nested deep", withRawConfig(strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000)), "metadata config: the run config is 2000000 bytes, more than the 1048576"},
		{"config nested deep and short", withRawConfig(`{"task":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`), "metadata config: run config: the config nests deeper than 8 levels"},
		{"config key twice", withRawConfig(`{"task":{"name":"copy","name":"repeat"}}`), `metadata config: run config: key "name" appears twice in the config.task`},
		{"config with two values", withRawConfig(`{"seed":1} {"seed":2}`), "more than one JSON value"},
		{"config with an invalid task and a NaN weight", func() []byte {
			b, _ := json.Marshal(func() rundir.Config { r := ckRunConfig(cfg); r.Task.Name = "spell"; return r }())
			file := sttest.SetElement(t, base, "tok_emb.weight", 0, nanBits)
			tensors, meta := ckParts(t, file)
			meta["config"] = string(b)
			return ckAssemble(t, tensors, meta)
		}(), `metadata config: task.name = "spell": unknown task`},
		{"config of another task", withRun(func(r *rundir.Config) { r.Task.Symbols = 9 }), "model.vocab = 7 does not match the vocabulary of task repeat (9)"},
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
			got, err := Load(path)
			if err == nil {
				t.Fatalf("Load accepted it: %+v", got.Config)
			}
			prefix := "checkpoint " + path + ": "
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q\nwant one line starting %q containing %q", msg, prefix, c.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(dir, "nope.safetensors")
		_, err := Load(path)
		if err == nil || err.Error() != "checkpoint "+path+": no such file or directory" {
			t.Errorf("error %v", err)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("errors.Is(%v, fs.ErrNotExist) is false; train's resume needs it", err)
		}
	})
}

// TestLoadBoundedRead: Load refuses input that never ends or is absurdly
// large without reading it whole: /dev/zero (not a regular file) at once, and a file over MaxLen (sparse, so the test writes
// nothing) by its size.
func TestLoadBoundedRead(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err := Load("/dev/zero")
		if want := "checkpoint /dev/zero: is a character device, not a regular file"; err == nil || err.Error() != want {
			t.Errorf("/dev/zero: error %v, want %s", err, want)
		}
	}
	path := filepath.Join(t.TempDir(), "huge.safetensors")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Truncate(MaxLen + 1)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		t.Skipf("cannot make a sparse file of %d bytes: %v", int64(MaxLen+1), err)
	}
	_, err = Load(path)
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

// ckDecode is Load on the bytes of a file, written to dir.
func ckDecode(dir string, file []byte) (*Checkpoint, error) {
	path := filepath.Join(dir, "fuzz.safetensors")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		return nil, err
	}
	return Load(path)
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
			t.Fatalf("Save would refuse what Load accepted: %v", err)
		}
		var buf memFile
		if err := safetensors.WriteSealed(&buf, tensors, meta); err != nil {
			t.Fatal(err)
		}
		again, err := ckDecode(dir, buf.data)
		if err != nil {
			t.Fatalf("Load refuses what Save wrote: %v", err)
		}
		if !reflect.DeepEqual(again.Config, ck.Config) || again.Step != ck.Step {
			t.Fatalf("round trip changed config or step")
		}
		ckSameWeights(t, again.Model, ck.Model)
	})
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
	ck, err := Load(write("good.safetensors", good))
	if err != nil || !ck.Sealed {
		t.Fatalf("a fresh checkpoint: %v, sealed %v", err, ck != nil && ck.Sealed)
	}
	header, data := sttest.Split(t, good)
	start := len(good) - len(data)
	for _, at := range []int{start, start + len(data)/2, len(good) - 1} {
		flipped := bytes.Clone(good)
		flipped[at] ^= 0x10
		path := write(fmt.Sprintf("flipped-%d.safetensors", at), flipped)
		_, err := Load(path)
		want := "checkpoint " + path + ": tensor data does not match its data_sha256"
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("a bit flipped at byte %d of %d: %v, want a line starting %q", at, len(good), err, want)
		}
	}
	delete(header["__metadata__"].(map[string]any), safetensors.DigestKey)
	old, err := Load(write("old.safetensors", sttest.Join(t, header, data)))
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
	if err := Save(path, m, ckRunConfig(cfg), 0); err != nil {
		t.Fatal(err)
	}
	tensorBytes := 0
	for _, p := range m.Params {
		tensorBytes += 4 * p.Value.Shape().TotalSize()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	allocated := int(after.TotalAlloc - before.TotalAlloc)
	if limit := tensorBytes + 3<<20/2; allocated > limit {
		t.Errorf("loading %d bytes of tensors allocated %d bytes (limit %d)", tensorBytes, allocated, limit)
	}
}

// memFile is a file in memory that can patch what it wrote, as
// safetensors.WriteSealed needs.
type memFile struct{ data []byte }

func (f *memFile) Write(p []byte) (int, error) {
	f.data = append(f.data, p...)
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	return copy(f.data[off:], p), nil
}
