package hf_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/safetensors/sttest"
	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/hf"
)

// The fixtures of GPT-NeoX, GPT-Neo, Phi-3 and OLMo 2, written with their
// logits and attention by
//
//	/usr/bin/python3 open/hf/testdata/gen_neox_neo_phi3_olmo2_fixtures.py
//
// (its doc says what each directory exercises).
var fusedVariants = []string{"pythia", "neox", "tinystories", "phi3", "olmo2"}

// TestFusedLayoutsDecode: on each fixture and both paths, the KV-cache
// decoder's logits at each of the 16 steps equal the full forward's at
// that position within 1e-5 of the largest logit, and greedy decoding
// from the first 4 tokens writes the same 8 tokens through the cache as
// through full forwards of the growing sequence.
func TestFusedLayoutsDecode(t *testing.T) {
	for _, v := range fusedVariants {
		ref := readAttnReference(t, v)
		m := load(t, filepath.Join("testdata", v), hf.Options{}).Model
		for _, path := range []layers.Path{layers.Fused, layers.Gorgonia} {
			m.Config.Attention = string(path)
			full := logits(t, m, ref.Tokens)
			stepped := decodeLogits(t, m, ref.Tokens)
			vocab := m.Config.Vocab
			for s := range ref.Tokens {
				closeTo(t, fmt.Sprintf("%s/%s step %d", v, path, s), stepped[s], full[s*vocab:(s+1)*vocab], 1e-5)
			}
			cached, forward := greedyCached(t, m, ref.Tokens[:4], 8), greedyForward(t, m, ref.Tokens[:4], 8)
			if !slices.Equal(cached, forward) {
				t.Errorf("%s/%s: the cache writes %v, full forwards %v", v, path, cached, forward)
			}
		}
	}
}

// decodeLogits are the decoder's logits at each step of feeding tokens.
func decodeLogits(t *testing.T, m *model.Model, tokens []int) [][]float64 {
	t.Helper()
	dec, err := model.NewDecoder(m, 1, len(tokens))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	out := make([][]float64, len(tokens))
	for s, tok := range tokens {
		next, err := dec.Step([]int{tok})
		if err != nil {
			t.Fatal(err)
		}
		out[s] = slices.Clone(next) // Step reuses its slice
	}
	return out
}

// greedyCached extends prompt by n tokens, each the decoder's most likely.
func greedyCached(t *testing.T, m *model.Model, prompt []int, n int) []int {
	t.Helper()
	dec, err := model.NewDecoder(m, 1, len(prompt)+n)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var next []float64
	for _, tok := range prompt {
		if next, err = dec.Step([]int{tok}); err != nil {
			t.Fatal(err)
		}
	}
	var out []int
	for range n {
		tok := mostLikely(next)
		out = append(out, tok)
		if next, err = dec.Step([]int{tok}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// greedyForward extends prompt by n tokens, each the most likely at the
// last position of a full forward of the sequence so far.
func greedyForward(t *testing.T, m *model.Model, prompt []int, n int) []int {
	t.Helper()
	seq := slices.Clone(prompt)
	vocab := m.Config.Vocab
	for range n {
		all := logits(t, m, seq)
		seq = append(seq, mostLikely(all[len(all)-vocab:]))
	}
	return seq[len(prompt):]
}

func mostLikely(xs []float64) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] {
			best = i
		}
	}
	return best
}

// TestLoadPythiaBuffersCounted: a deep Pythia (100 layers, two wide) whose
// file holds the three legacy buffers of every layer (attention.bias,
// masked_bias, rotary_emb.inv_freq: 300 tensors the model does not read)
// opens: the tensor-count guard, which refuses a header listing more
// tensors than the model's names allow (and a slack of 64), counts them
// among the names.
func TestLoadPythiaBuffersCounted(t *testing.T) {
	const layers, width, vocab, positions = 100, 2, 4, 4
	dir := copyVariant(t, "pythia")
	configEdits(map[string]any{"num_hidden_layers": layers, "hidden_size": width, "intermediate_size": width, "vocab_size": vocab,
		"num_attention_heads": 1, "max_position_embeddings": positions, "rotary_pct": 1.0})(t, dir)
	tensors := map[string]sizedTensor{
		"gpt_neox.embed_in.weight": {"F32", []int{vocab, width}}, "embed_out.weight": {"F32", []int{vocab, width}},
		"gpt_neox.final_layer_norm.weight": {"F32", []int{width}}, "gpt_neox.final_layer_norm.bias": {"F32", []int{width}},
	}
	for i := range layers {
		p := fmt.Sprintf("gpt_neox.layers.%d.", i)
		for name, s := range map[string]sizedTensor{
			"input_layernorm.weight": {"F32", []int{width}}, "input_layernorm.bias": {"F32", []int{width}},
			"post_attention_layernorm.weight": {"F32", []int{width}}, "post_attention_layernorm.bias": {"F32", []int{width}},
			"attention.query_key_value.weight": {"F32", []int{3 * width, width}}, "attention.query_key_value.bias": {"F32", []int{3 * width}},
			"attention.dense.weight": {"F32", []int{width, width}}, "attention.dense.bias": {"F32", []int{width}},
			"mlp.dense_h_to_4h.weight": {"F32", []int{width, width}}, "mlp.dense_h_to_4h.bias": {"F32", []int{width}},
			"mlp.dense_4h_to_h.weight": {"F32", []int{width, width}}, "mlp.dense_4h_to_h.bias": {"F32", []int{width}},
			"attention.bias": {"BOOL", []int{1, 1, positions, positions}}, "attention.masked_bias": {"F32", []int{}},
			"attention.rotary_emb.inv_freq": {"F32", []int{width / 2}},
		} {
			tensors[p+name] = s
		}
	}
	writeZeros(t, filepath.Join(dir, hf.WeightsFile), tensors)
	m := load(t, dir, hf.Options{})
	if got := m.Model.Config.Layers; got != layers {
		t.Errorf("loaded %d layers, want %d", got, layers)
	}
}

// sizedTensor is a tensor's dtype and shape.
type sizedTensor struct {
	dtype string
	shape []int
}

// writeZeros writes a safetensors file of the tensors, every value zero.
func writeZeros(t *testing.T, path string, tensors map[string]sizedTensor) {
	t.Helper()
	names := make([]string, 0, len(tensors))
	for name := range tensors {
		names = append(names, name)
	}
	slices.Sort(names)
	header, offset := map[string]any{}, 0
	for _, name := range names {
		s := tensors[name]
		n := map[string]int{"F32": 4, "BOOL": 1}[s.dtype]
		for _, d := range s.shape {
			n *= d
		}
		header[name] = map[string]any{"dtype": s.dtype, "shape": s.shape, "data_offsets": []int{offset, offset + n}}
		offset += n
	}
	file := sttest.Join(t, header, make([]byte, offset))
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFusedLayoutsRefuseFiles: a fused tensor of the wrong shape, or one
// missing, is refused naming it, its shape and the one config.json gives
// it (the rows of every part it fills).
func TestFusedLayoutsRefuseFiles(t *testing.T) {
	for _, c := range []struct {
		name, variant, want string
		edit                func(t *testing.T, path string)
	}{
		{"query_key_value of the wrong rows", "pythia",
			`tensor "gpt_neox.layers.0.attention.query_key_value.weight" has shape [144 12], want [72 24]`,
			func(t *testing.T, path string) {
				editHeader(t, path, func(h map[string]any) {
					h["gpt_neox.layers.0.attention.query_key_value.weight"].(map[string]any)["shape"] = []int{144, 12}
				})
			}},
		{"gate_up_proj missing", "phi3", `holds no tensor "model.layers.1.mlp.gate_up_proj.weight"`,
			func(t *testing.T, path string) {
				dropTensor(t, path, "model.layers.1.mlp.gate_up_proj.weight")
			}},
	} {
		dir := copyVariant(t, c.variant)
		path := filepath.Join(dir, hf.WeightsFile)
		c.edit(t, path)
		_, err := hf.Load(dir, hf.Options{})
		if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v\nwant one naming %s and saying %q", c.name, err, path, c.want)
		}
	}
}

// dropTensor removes tensor name, its entry and its bytes, from the
// safetensors file at path.
func dropTensor(t *testing.T, path, name string) {
	t.Helper()
	header, data := sttest.Split(t, readFile(t, path))
	begin, end := sttest.Offsets(header, name)
	delete(header, name)
	for k := range header {
		if k == "__metadata__" {
			continue
		}
		offsets := sttest.Entry(header, k)["data_offsets"].([]any)
		for i, o := range offsets {
			if o.(float64) >= end {
				offsets[i] = o.(float64) - (end - begin)
			}
		}
	}
	data = append(data[:int(begin):int(begin)], data[int(end):]...)
	writeFile(t, path, string(sttest.Join(t, header, data)))
}
