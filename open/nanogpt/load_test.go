package nanogpt_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/nanogpt"
	"github.com/attnscope/attnscope/open/opentest"
)

// reference is testdata/reference.json, which gen_fixtures.py writes with
// nanoGPT's own model.py: each checkpoint's logits on the tokens.
type reference struct {
	Prompt      string `json:"prompt"`
	Tokens      []int  `json:"tokens"`
	Checkpoints map[string]struct {
		IterNum   int `json:"iter_num"`
		ModelArgs struct {
			NLayer    int  `json:"n_layer"`
			NHead     int  `json:"n_head"`
			NEmbd     int  `json:"n_embd"`
			BlockSize int  `json:"block_size"`
			Bias      bool `json:"bias"`
			VocabSize int  `json:"vocab_size"`
		} `json:"model_args"`
		Logits [][]float64 `json:"logits"`
	} `json:"checkpoints"`
}

func readReference(t *testing.T) reference {
	t.Helper()
	raw, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Checkpoints) != 2 {
		t.Fatalf("reference.json has %d checkpoints, want bias and nobias", len(ref.Checkpoints))
	}
	return ref
}

const meta = "testdata/meta.pkl"

func load(t *testing.T, path string, o nanogpt.Options) *nanogpt.Model {
	t.Helper()
	m, err := nanogpt.Load(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// logits runs m on tokens through a graph of its own (opentest.Logits).
func logits(t *testing.T, m *model.Model, tokens []int) []float64 {
	b := &data.Batch{Size: 1, SeqLen: len(tokens), Tokens: tokens, Targets: tokens, Mask: make([]float64, len(tokens))}
	return opentest.Logits(t, m, b)
}

// TestLogitsMatchNanoGPT: both checkpoints train.py wrote (bias=True, and
// bias=False: LayerNorms and Linears without biases) load with model_args'
// sizes and iter_num, and give nanoGPT's model.py logits on the reference
// tokens (the whole context) on both attention paths, within 1e-5 of the
// largest logit: both sides compute in float32 from the same weights, in
// different orders.
func TestLogitsMatchNanoGPT(t *testing.T) {
	ref := readReference(t)
	for name, want := range ref.Checkpoints {
		m := load(t, filepath.Join("testdata", name, "ckpt.pt"), nanogpt.Options{Vocab: meta})
		cfg, args := m.Model.Config, want.ModelArgs
		if got := []int{cfg.Layers, cfg.Heads, cfg.DModel, cfg.Context, cfg.Vocab}; !slices.Equal(got, []int{args.NLayer, args.NHead, args.NEmbd, args.BlockSize, args.VocabSize}) ||
			cfg.QKVBias != args.Bias || cfg.NormBias.On() != args.Bias || cfg.MLPBias.On() != args.Bias || m.Step != want.IterNum {
			t.Errorf("%s: config %+v, step %d; want model_args %+v, iter_num %d", name, cfg, m.Step, args, want.IterNum)
		}
		for _, path := range []string{"fused", "gorgonia"} {
			m.Model.Config.Attention = path
			got := logits(t, m.Model, ref.Tokens)
			worst, scale := 0.0, 0.0
			for pos, row := range want.Logits {
				for k, w := range row {
					worst = math.Max(worst, math.Abs(got[pos*len(row)+k]-w))
					scale = math.Max(scale, math.Abs(w))
				}
			}
			if len(got) != len(ref.Tokens)*args.VocabSize || worst > 1e-5*scale {
				t.Errorf("%s on the %s path: %d logits differ from nanoGPT's %d by up to %.3g (largest logit %.3g, tolerance 1e-5 of it)",
					name, path, len(got), len(ref.Tokens)*args.VocabSize, worst, scale)
			}
		}
	}
}

// TestDecoderMatchesForward: the KV-cache decoder on a loaded checkpoint
// gives, token by token, the logits a full forward of the sequence gives at
// each position (causal: position s sees the prefix only), within 1e-4 of
// the largest logit (float32), on both paths.
func TestDecoderMatchesForward(t *testing.T) {
	tokens := readReference(t).Tokens
	m := load(t, "testdata/nobias/ckpt.pt", nanogpt.Options{})
	for _, path := range []string{"fused", "gorgonia"} {
		m.Model.Config.Attention = path
		full := logits(t, m.Model, tokens)
		dec, err := model.NewDecoder(m.Model, 1, len(tokens))
		if err != nil {
			t.Fatal(err)
		}
		v, worst, scale := m.Model.Config.Vocab, 0.0, 0.0
		for s, tok := range tokens {
			got, err := dec.Step([]int{tok})
			if err != nil {
				t.Fatal(err)
			}
			for k := range v {
				worst = math.Max(worst, math.Abs(got[k]-full[s*v+k]))
				scale = math.Max(scale, math.Abs(full[s*v+k]))
			}
		}
		dec.Close()
		if worst > 1e-4*scale {
			t.Errorf("%s path: the decoder's logits differ from the full forward's by up to %.3g (largest %.3g)", path, worst, scale)
		}
	}
}

// TestVocabulary: the characters come from the meta.pkl named, else from
// one beside the checkpoint, else there are none and a note says which file
// holds them; each file read is listed and announced.
func TestVocabulary(t *testing.T) {
	want := corpusChars(t)
	beside := t.TempDir()
	for _, f := range []string{"bias/ckpt.pt", "meta.pkl"} {
		raw, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(beside, filepath.Base(f)), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	besideCkpt, besideMeta := filepath.Join(beside, "ckpt.pt"), filepath.Join(beside, "meta.pkl")
	for _, c := range []struct {
		name, ckpt, vocab string
		files             []string
		chars             []string
		notice            string
	}{
		{"named", "testdata/bias/ckpt.pt", meta, []string{"testdata/bias/ckpt.pt", meta}, want, "reading the characters of " + meta},
		{"beside", besideCkpt, "", []string{besideCkpt, besideMeta}, want, "reading the characters of " + besideMeta},
		{"none", "testdata/bias/ckpt.pt", "", []string{"testdata/bias/ckpt.pt"}, nil,
			"note: no meta.pkl beside testdata/bias/ckpt.pt and none named, but its " + strconv.Itoa(len(want)) + " ids are fewer than GPT-2's 50257 tokens: name nanoGPT's data/attnscope_char/meta.pkl with -vocab"},
	} {
		var notices bytes.Buffer
		m := load(t, c.ckpt, nanogpt.Options{Vocab: c.vocab, Notices: &notices})
		if !slices.Equal(m.Files, c.files) || !slices.Equal(m.Chars, c.chars) || notices.String() != c.notice+"\n" {
			t.Errorf("%s: files %q, chars %q, notices %q; want %q, %q, %q", c.name, m.Files, m.Chars, notices.String(), c.files, c.chars, c.notice)
		}
	}
}

// corpusChars are the distinct characters of the corpus the fixtures were
// trained on, in code point order, as prepare.py lists them.
func corpusChars(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("testdata/corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	var chars []string
	for _, r := range string(raw) {
		if !slices.Contains(chars, string(r)) {
			chars = append(chars, string(r))
		}
	}
	slices.Sort(chars)
	return chars
}
