package hf_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/open/hf"
)

// projections name tensors of a Llama layer.
var projections = []string{"q_proj", "k_proj", "v_proj"}

// zeroSizeModel writes issue 42's model: a Llama of the given layers, two
// channels wide, whose model.safetensors holds n (at most 3 per layer)
// tensors of shape (0, 2), each a name of the model's, and no data.
func zeroSizeModel(t *testing.T, layers, n int) string {
	t.Helper()
	dir := copyVariant(t, "llama")
	configEdits(map[string]any{"num_hidden_layers": layers, "hidden_size": 2, "intermediate_size": 2, "vocab_size": 4,
		"num_attention_heads": 1, "num_key_value_heads": 1})(t, dir)
	header := []byte{'{'}
	for i := range n {
		if i > 0 {
			header = append(header, ',')
		}
		header = fmt.Appendf(header, `"model.layers.%d.self_attn.%s.weight":{"dtype":"F32","shape":[0,2],"data_offsets":[0,0]}`,
			i%layers, projections[i/layers])
	}
	header = append(header, '}')
	file := append(binary.LittleEndian.AppendUint64(nil, uint64(len(header))), header...)
	if err := os.WriteFile(filepath.Join(dir, hf.WeightsFile), file, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLoadBoundsTensorCount: issue 42's zero-size tensors. A file of as
// many tensors as config.json has layers passed the old guard (tensors
// no fewer than layers) and then cost a name table of every layer's
// names; one of more tensors than the model has buffers that may be
// empty was decoded whole. (The 200,000 layers are now refused
// from config.json, TestLoadBoundsLayers; these are within the bound.) Each is now refused from the counts: the first
// after its header, the second as soon as its header passes the bound.
// Neither allocates more than a small multiple of the file.
func TestLoadBoundsTensorCount(t *testing.T) {
	for _, c := range []struct {
		name      string
		layers, n int
		want      string
	}{
		{"as many tensors as layers", 1_000, 1_000,
			"holds 1000 tensors, too few for the 1000 layers of config.json, which need at least 9003 (config.json has vocab_size 4, hidden_size 2, intermediate_size 2, num_hidden_layers 1000"},
		{"more empty tensors than buffers", 1_000, 3_000,
			"lists more than 1064 tensors with no elements (a zero in the shape); the LlamaForCausalLM of config.json (config.json has vocab_size 4, hidden_size 2, intermediate_size 2, num_hidden_layers 1000, num_attention_heads 1, num_key_value_heads 1) has at most 10003 tensors, at most 1000 of them with no elements"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := zeroSizeModel(t, c.layers, c.n)
			info, err := os.Stat(filepath.Join(dir, hf.WeightsFile))
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err = hf.Load(dir, hf.Options{})
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("loaded")
			}
			text, file := err.Error(), filepath.Join(dir, hf.WeightsFile)
			if strings.Contains(text, "\n") || !strings.HasPrefix(text, file+": ") || !strings.Contains(text, c.want) {
				t.Errorf("error %q\nwant one line starting %q and saying %q", text, file+":", c.want)
			}
			// Decoding the header and building the model's name table cost
			// over 50 times the file before the counts were checked.
			if alloc, limit := after.TotalAlloc-before.TotalAlloc, 8*uint64(info.Size()); alloc > limit {
				t.Errorf("refusing allocated %d bytes, want at most %d (8 times the %d-byte file)", alloc, limit, info.Size())
			}
		})
	}
}

// TestLoadBoundsShards: a shard is bounded by what the index places in it,
// and the index by what the model can hold, each with the slack that lets
// a file a few tensors off be told which tensor is wrong.
func TestLoadBoundsShards(t *testing.T) {
	extra := func(n int) map[string]any {
		out := map[string]any{}
		for i := range n {
			out[fmt.Sprintf("extra.%d", i)] = map[string]any{"dtype": "F32", "shape": []int{0}, "data_offsets": []int{0, 0}}
		}
		return out
	}
	for _, c := range []struct {
		name string
		edit func(t *testing.T, dir string)
		file string
		want string
	}{
		{"a shard of more tensors than the index places in it", func(t *testing.T, dir string) {
			editHeader(t, filepath.Join(dir, shard1), func(h map[string]any) {
				for k, v := range extra(100) {
					h[k] = v
				}
			})
		}, shard1, "lists more than 74 tensors; model.safetensors.index.json places 10 tensors in it"},
		{"an index of more tensors than the model has", func(t *testing.T, dir string) {
			editWeightMap(t, dir, func(m map[string]any) {
				for k := range extra(200) {
					m[k] = shard1
				}
			})
		}, hf.IndexFile, "weight_map lists 228 tensors; the GPT2LMHeadModel of config.json (config.json has vocab_size 96, n_positions 32, n_embd 32, n_inner 128, n_layer 2) has at most 65 tensors"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyVariant(t, "sharded")
			c.edit(t, dir)
			_, err := hf.Load(dir, hf.Options{})
			if err == nil {
				t.Fatal("loaded")
			}
			text, file := err.Error(), filepath.Join(dir, c.file)
			if strings.Contains(text, "\n") || !strings.HasPrefix(text, file+": ") || !strings.Contains(text, c.want) {
				t.Errorf("error %q\nwant one line starting %q and saying %q", text, file+":", c.want)
			}
		})
	}
}

// TestLoadBoundsLayers: issue 42's well-formed absurd model, 100,000
// layers two wide, loaded for 10 s and a gigabyte before inspect's
// estimate refused it: the weights' size, counted from the widths, is
// small. It is refused from config.json, naming the key, the value and
// the bound, before the weights are opened (here a file that is not
// safetensors, which opening would report) and having allocated next to
// nothing.
func TestLoadBoundsLayers(t *testing.T) {
	dir := copyVariant(t, "llama")
	configEdits(map[string]any{"num_hidden_layers": 100_000, "hidden_size": 2, "intermediate_size": 2, "vocab_size": 4,
		"num_attention_heads": 1, "num_key_value_heads": 1})(t, dir)
	if err := os.WriteFile(filepath.Join(dir, hf.WeightsFile), []byte("not safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := hf.Load(dir, hf.Options{})
	runtime.ReadMemStats(&after)
	want := filepath.Join(dir, hf.ConfigFile) + ": num_hidden_layers = 100000: want a positive integer of at most 1024 (the deepest models have about 128 layers)"
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %q", err, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("refusing allocated %d bytes, want at most 1 MiB", alloc)
	}
}
