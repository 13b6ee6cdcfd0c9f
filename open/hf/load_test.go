package hf_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/hf"
	"github.com/attnscope/attnscope/open/opentest"
)

// The fixtures in testdata are Hugging Face directories with random
// weights and their logits from an independent PyTorch forward: GPT-2's
// written by
//
//	/usr/bin/python3 open/hf/testdata/gen_fixtures.py
//
// Llama's, Mistral's and Qwen 2's by gen_llama_fixtures.py beside it (see
// each script's doc for what each directory exercises).
var variants = []string{"prefixed", "buffers", "sharded", "distil", "llama", "biased", "mistral", "qwen2"}

// reference is a fixture's NAME.reference.json: a sequence and its logits
// (position, vocabulary) from the PyTorch forward, float64 on the values
// the files store.
type reference struct {
	Tokens []int       `json:"tokens"`
	Logits [][]float64 `json:"logits"`
}

func readReference(t *testing.T, variant string) reference {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", variant+".reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

func load(t *testing.T, dir string, o hf.Options) *hf.Model {
	t.Helper()
	m, err := hf.Load(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// logits are m's logits of tokens, (position, vocabulary) row-major.
func logits(t *testing.T, m *model.Model, tokens []int) []float64 {
	n := len(tokens)
	return opentest.Logits(t, m, &data.Batch{Size: 1, SeqLen: n, Tokens: tokens, Targets: tokens, Mask: make([]float64, n)})
}

func flatten(rows [][]float64) []float64 {
	var out []float64
	for _, row := range rows {
		out = append(out, row...)
	}
	return out
}

// closeTo fails unless got and want differ by at most tol times the
// largest |want| (at least 1).
func closeTo(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	worst, at, scale := 0.0, 0, 1.0
	for i := range want {
		if d := math.Abs(got[i] - want[i]); d > worst {
			worst, at = d, i
		}
		scale = math.Max(scale, math.Abs(want[i]))
	}
	if worst > tol*scale {
		t.Errorf("%s: value %d is %v, want %v (largest |value| %.3g; tolerance %g of it)", what, at, got[at], want[at], scale, tol)
	}
}

// TestLoadMatchesPyTorch: each fixture directory loads, and the model's
// logits on the fixture's 16 tokens equal PyTorch's on both attention
// paths within 1e-5 of the largest logit (Go computes in float32, PyTorch
// in float64 from the same stored values; the worst seen is about 5e-7 of
// it). "prefixed, untied" reads the same directory with
// tie_word_embeddings false, so the head comes from its lm_head.weight
// (stored equal to wte) instead of wte.
func TestLoadMatchesPyTorch(t *testing.T) {
	untied := copyVariant(t, "prefixed")
	editConfig(t, untied, func(c map[string]any) { c["tie_word_embeddings"] = false })
	dirs := map[string]string{"prefixed, untied": untied}
	refs := map[string]string{"prefixed, untied": "prefixed"}
	for _, v := range variants {
		dirs[v], refs[v] = filepath.Join("testdata", v), v
	}
	for name, dir := range dirs {
		ref := readReference(t, refs[name])
		m := load(t, dir, hf.Options{})
		want := flatten(ref.Logits)
		for _, path := range []layers.Path{layers.Fused, layers.Gorgonia} {
			m.Model.Config.Attention = string(path)
			closeTo(t, name+"/"+string(path), logits(t, m.Model, ref.Tokens), want, 1e-5)
		}
	}
}

// TestDecoderMatchesForward: on a loaded model, the KV-cache decoder's
// logits at each step equal the full forward's at that position (causal:
// the prefix decides them), within 1e-5 of the largest logit, on both
// paths: GPT-2's, a grouped-query Llama's (rotary positions at the cache's
// offsets) and Mistral's, whose window of 4 is shorter than the 16 steps.
func TestDecoderMatchesForward(t *testing.T) {
	for _, variant := range []string{"buffers", "llama", "mistral"} {
		ref := readReference(t, variant)
		m := load(t, filepath.Join("testdata", variant), hf.Options{}).Model
		for _, path := range []layers.Path{layers.Fused, layers.Gorgonia} {
			m.Config.Attention = string(path)
			full := logits(t, m, ref.Tokens)
			dec, err := model.NewDecoder(m, 1, len(ref.Tokens))
			if err != nil {
				t.Fatal(err)
			}
			v := m.Config.Vocab
			for s, tok := range ref.Tokens {
				got, err := dec.Step([]int{tok})
				if err != nil {
					t.Fatal(err)
				}
				closeTo(t, fmt.Sprintf("%s/%s step %d", variant, path, s), got, full[s*v:(s+1)*v], 1e-5)
			}
			dec.Close()
		}
	}
}

// TestLoadConfig: each fixture's config.json maps to the model.Config
// its architecture's definition gives it. GPT-2: learned positions,
// LayerNorm with bias at layer_norm_epsilon (0 standing for the default
// 1e-5), the activation, biases everywhere, a tied head, d_ff = n_inner or
// 4·n_embd, context = n_positions (distil's old config has n_ctx only).
// Llama, Mistral, Qwen 2: RMSNorm at rms_norm_eps, SwiGLU without MLP
// biases (unless mlp_bias), rotary positions at rope_theta, kv heads (0
// when all heads have their own), the biases each asks for, context =
// max_position_embeddings, Mistral's sliding window.
func TestLoadConfig(t *testing.T) {
	gpt2 := model.Config{Vocab: 96, Context: 32, DModel: 32, Heads: 4, Layers: 2, MLP: true, DFF: 128, QKVBias: true, OutBias: true,
		Position: model.PositionLearned, Norm: model.NormLayer, Activation: model.ActivationGELUTanh, TieEmbeddings: true}
	edit := func(c model.Config, change func(*model.Config)) model.Config { change(&c); return c }
	llama := model.Config{Vocab: 96, Context: 64, DModel: 32, Heads: 4, Layers: 2, MLP: true, DFF: 40, KVHeads: 2,
		Position: model.PositionRope, RopeBase: 1000, Norm: model.NormRMS, Activation: model.ActivationSwiGLU, MLPBias: model.FlagOff}
	want := map[string]struct {
		arch string
		cfg  model.Config
	}{
		"prefixed": {"GPT2LMHeadModel", gpt2}, "sharded": {"GPT2LMHeadModel", gpt2},
		"buffers": {"GPT2LMHeadModel", edit(gpt2, func(c *model.Config) { c.NormEps = 1e-2 })},
		"distil": {"GPT2LMHeadModel", edit(gpt2, func(c *model.Config) {
			c.DModel, c.Layers, c.DFF, c.Activation = 16, 6, 48, model.ActivationGELU
		})},
		"llama": {"LlamaForCausalLM", llama},
		"biased": {"LlamaForCausalLM", edit(llama, func(c *model.Config) {
			c.KVHeads, c.RopeBase, c.NormEps, c.TieEmbeddings = 0, 10000, 1e-6, true
			c.QKVBias, c.OutBias, c.MLPBias = true, true, model.FlagOn
		})},
		"mistral": {"MistralForCausalLM", edit(llama, func(c *model.Config) { c.KVHeads, c.RopeBase, c.NormEps, c.Window = 1, 10000, 1e-2, 4 })},
		"qwen2": {"Qwen2ForCausalLM", edit(llama, func(c *model.Config) {
			c.RopeBase, c.NormEps, c.TieEmbeddings, c.QKVBias = 1e6, 1e-6, true, true
		})},
	}
	for _, v := range variants {
		m := load(t, filepath.Join("testdata", v), hf.Options{})
		if m.Model.Config != want[v].cfg {
			t.Errorf("%s: config %+v\nwant %+v", v, m.Model.Config, want[v].cfg)
		}
		if m.Arch != want[v].arch {
			t.Errorf("%s: Arch %q, want %s", v, m.Arch, want[v].arch)
		}
	}
}

// TestLoadNamesFilesRead: Notices gets one line per file read, with its
// size, and Files lists them, config.json first, then the index and the
// shards in name order.
func TestLoadNamesFilesRead(t *testing.T) {
	dir := filepath.Join("testdata", "sharded")
	var notices bytes.Buffer
	m := load(t, dir, hf.Options{Notices: &notices})
	want := []string{"config.json", "model.safetensors.index.json",
		"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"}
	lines := strings.Split(strings.TrimSuffix(notices.String(), "\n"), "\n")
	if len(m.Files) != len(want) || len(lines) != len(want) {
		t.Fatalf("Files %q, notices %q; want the %d files %q", m.Files, lines, len(want), want)
	}
	for i, name := range want {
		path := filepath.Join(dir, name)
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if m.Files[i] != path {
			t.Errorf("Files[%d] = %q, want %q", i, m.Files[i], path)
		}
		if want := fmt.Sprintf("reading %s (%s)", path, msg.Bytes(float64(info.Size()))); lines[i] != want {
			t.Errorf("notice %d is %q, want %q", i, lines[i], want)
		}
	}
}

// TestTokenizerFiles: TokenizerFiles lists the tokenizer files the
// directory holds, in a fixed order, and none when it holds none.
func TestTokenizerFiles(t *testing.T) {
	dir := copyVariant(t, "distil")
	if got := load(t, dir, hf.Options{}).TokenizerFiles; len(got) != 0 {
		t.Errorf("TokenizerFiles of a directory without any: %q", got)
	}
	for _, name := range []string{"merges.txt", "vocab.json", "tokenizer.json"} {
		writeFile(t, filepath.Join(dir, name), "{}")
	}
	want := []string{filepath.Join(dir, "tokenizer.json"), filepath.Join(dir, "vocab.json"), filepath.Join(dir, "merges.txt")}
	if got := load(t, dir, hf.Options{}).TokenizerFiles; !slices.Equal(got, want) {
		t.Errorf("TokenizerFiles = %q, want %q", got, want)
	}
}

// TestLoadFollowsLinksInside: a weight file that is a symlink to a file
// inside the directory is read like the file itself, the link's target
// absolute and the directory named by a relative path.
func TestLoadFollowsLinksInside(t *testing.T) {
	dir := copyVariant(t, "distil")
	if err := os.Mkdir(filepath.Join(dir, "blobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	moveAndLink(t, filepath.Join(dir, "model.safetensors"), filepath.Join(dir, "blobs", "weights"))
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(cwd, dir)
	if err != nil {
		t.Fatal(err)
	}
	ref := readReference(t, "distil")
	closeTo(t, "through the link", logits(t, load(t, rel, hf.Options{}).Model, ref.Tokens), flatten(ref.Logits), 1e-5)
}

// TestLoadHubCacheSnapshot: the Hugging Face cache's layout, a snapshot
// directory models--NAME/snapshots/REV whose files are relative links to
// models--NAME/blobs/HASH, loads like the files themselves; a link from
// such a snapshot to anywhere else is still refused, and so is a link into
// a blobs directory beside a directory that is not a cache snapshot.
func TestLoadHubCacheSnapshot(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "models--tiny")
	src := filepath.Join("testdata", "distil")
	snapshot, blobs := filepath.Join(cache, "snapshots", "0123abc"), filepath.Join(cache, "blobs")
	for _, d := range []string{snapshot, blobs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		blob := fmt.Sprintf("blob%d", i)
		writeFile(t, filepath.Join(blobs, blob), string(readFile(t, filepath.Join(src, e.Name()))))
		if err := os.Symlink(filepath.Join("..", "..", "blobs", blob), filepath.Join(snapshot, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	ref := readReference(t, "distil")
	closeTo(t, "the cache snapshot", logits(t, load(t, snapshot, hf.Options{}).Model, ref.Tokens), flatten(ref.Logits), 1e-5)

	outside := filepath.Join(t.TempDir(), "elsewhere.json")
	writeFile(t, outside, "{}")
	if err := os.Symlink(outside, filepath.Join(snapshot, "vocab.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := hf.Load(snapshot, hf.Options{}); err == nil || !strings.Contains(err.Error(), "is a symlink to") {
		t.Errorf("a snapshot's link outside the cache repository: %v", err)
	}
	plain := filepath.Join(cache, "plain")
	if err := os.Mkdir(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join("..", "snapshots", "0123abc", e.Name()), filepath.Join(plain, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := hf.Load(plain, hf.Options{}); err == nil || !strings.Contains(err.Error(), "is a symlink to") {
		t.Errorf("links into a cache from a directory that is not a snapshot: %v", err)
	}
}

// TestLoadProgress: Progress hears the weights' bytes read, rising to
// their total across every shard, and loading without it reads the same.
func TestLoadProgress(t *testing.T) {
	dir := filepath.Join("testdata", "sharded")
	var seen [][2]int64
	load(t, dir, hf.Options{Progress: func(done, total int64) { seen = append(seen, [2]int64{done, total}) }})
	if len(seen) < 4 {
		t.Fatalf("%d progress calls for 3 shards: %v", len(seen), seen)
	}
	total := seen[0][1]
	if seen[0][0] != 0 || total <= 0 || seen[len(seen)-1] != [2]int64{total, total} {
		t.Errorf("progress %v: want 0 first, the total last", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i][0] < seen[i-1][0] || seen[i][1] != total {
			t.Errorf("progress went from %v to %v", seen[i-1], seen[i])
		}
	}
}
