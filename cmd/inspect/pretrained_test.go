package main

import (
	"bytes"
	"encoding/json"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/report"
)

// runNoted runs the command, failing the test on an error; what it reads is
// named on stderr, which it returns.
func runNoted(t *testing.T, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("run %q: %v", args, err)
	}
	if !strings.Contains(stderr.String(), "reading ") {
		t.Errorf("run %q named no file read: %q", args, stderr.String())
	}
	return stdout.Bytes()
}

// TestPretrainedViews: a model trained elsewhere opens in every view. By
// default its roles pool over repeated random tokens (8 of them) and its 36
// heads show as a grid with the heatmaps of the 4 strongest; -text shows the text's
// tokens as labels ("␣" for spaces), scores the roles on it at every
// position; -json carries the tokens and labels; -circuits, -ablate and
// -html run; a nanoGPT character model reads -text through meta.pkl; a
// Llama and a Mistral run every view (llamaFamilyViews), the window
// masking more of Mistral's heatmaps.
func TestPretrainedViews(t *testing.T) {
	dir := opentest.GPT2Dir(t, model.Config{Context: 128, DModel: 24, Heads: 12, Layers: 3, DFF: 48})
	out := prose(string(runNoted(t, "-checkpoint", dir, "-color", "never")))
	for _, want := range []string{"Hugging Face GPT2LMHeadModel, tokenizer GPT-2 byte-level BPE (50257 tokens)",
		"roles pooled over 8 examples of repeated-tokens", "layer   h0", "heatmaps of the 4 heads of highest role score of 36"} {
		if !strings.Contains(out, want) {
			t.Errorf("default view lacks %q:\n%.1500s", want, out)
		}
	}
	out = string(runNoted(t, "-checkpoint", dir, "-text", "The cat sat on the mat.", "-layer", "1", "-head", "0", "-color", "never"))
	for _, want := range []string{"sequence (from -text;", "every one scored", "␣cat", "roles scored on the text given", "layer 1 head 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("-text view lacks %q:\n%.2500s", want, out)
		}
	}
	var doc struct {
		Tokens []int    `json:"tokens"`
		Labels []string `json:"labels"`
	}
	if err := json.Unmarshal(runNoted(t, "-checkpoint", dir, "-text", "Hello world", "-json"), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tokens) != 2 || doc.Tokens[0] != 15496 || doc.Labels[1] != "␣world" {
		t.Errorf("-json of \"Hello world\": tokens %v, labels %q; want GPT-2's [15496 995] and ␣world", doc.Tokens, doc.Labels)
	}
	// 36 heads on 8 examples of 101 tokens pass analysis.MaxPerHeadTokens:
	// patching and ablation run the first 4; the 2 heads -layer and -head
	// pick run all 8.
	for _, c := range []struct {
		pick []string
		n    string
	}{{nil, "4"}, {[]string{"-layer", "0", "-head", "0,5"}, "8"}} {
		out = string(runNoted(t, append([]string{"-checkpoint", dir, "-circuits", "-ablate", "-examples", "8", "-summary", "-color", "never"}, c.pick...)...))
		for _, want := range []string{"in-context learning", "logit lens", "Δloss", "zeros on " + c.n + " repeated-tokens sequences of 100 tokens;"} {
			if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
				t.Errorf("-circuits -ablate %q lacks %q:\n%s", c.pick, want, out)
			}
		}
	}
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "activation patching: undefined") {
		t.Errorf("-circuits lacks its patching line:\n%s", out)
	}
	ablated := out[strings.Index(out, "ablation (zero)"):]
	if strings.Contains(ablated, "held-out") || strings.Contains(ablated, "exact") {
		t.Errorf("the ablation of a model trained elsewhere names a run's held-out set or an exact match it does not have:\n%s", ablated)
	}
	// -text: the heads are removed on the text given, the one the roles
	// were scored on, and -summary shows the table.
	out = string(runNoted(t, "-checkpoint", dir, "-text", "The cat sat on the mat.", "-ablate", "-summary", "-color", "never"))
	for _, want := range []string{"roles scored on the text given", "on the sequence given with -text (7 tokens);", "Δloss"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("-text -ablate -summary lacks %q:\n%s", want, out)
		}
	}
	page := filepath.Join(t.TempDir(), "page.html")
	runNoted(t, "-checkpoint", dir, "-examples", "2", "-html", page)
	if info, err := os.Stat(page); err != nil || info.Size() == 0 {
		t.Errorf("-html wrote nothing: %v", err)
	}
	nano := filepath.Join("..", "..", "open", "nanogpt", "testdata")
	out = string(runNoted(t, "-checkpoint", filepath.Join(nano, "bias", "ckpt.pt"), "-vocab", filepath.Join(nano, "meta.pkl"), "-text", "the cat", "-summary", "-color", "never"))
	if !strings.Contains(prose(out), "nanoGPT, tokenizer characters (49 tokens)") {
		t.Errorf("nanoGPT -text:\n%s", out)
	}
	masked := map[string]int{}
	for _, c := range llamaFamily {
		masked[c.variant] = llamaFamilyViews(t, c)
	}
	// The same tokens through the same layout: Mistral's window of 4 masks
	// the keys 4 or more positions back as well, 0+1+2 of 7 rows per head.
	if got := masked["mistral"] - masked["llama"]; got != 8*(1+2+3) {
		t.Errorf("Mistral's heatmaps mask %d cells more than Llama's, want %d for a window of 4", got, 8*(1+2+3))
	}
}

// llamaFamily are the Llama-family fixtures of open/hf the views run on: a
// Llama whose 4 query heads share 2 key-value heads (untied), a Mistral of
// 1 key-value head and a window of 4.
var llamaFamily = []llamaFixture{
	{"llama", "Hugging Face LlamaForCausalLM", "rope positions (base 1000), 2 kv heads (grouped-query)", []int{0, 0, 1, 1}, 0},
	{"mistral", "Hugging Face MistralForCausalLM", "1 kv head (multi-query), window 4", []int{0, 0, 0, 0}, 4},
}

// llamaFixture is a Llama-family directory of open/hf/testdata and what
// the views must show of it.
type llamaFixture struct {
	variant, source, family string
	kv                      []int // the key-value head of each query head
	window                  int
}

// llamaTokens is the sequence the Llama-family views show: BOS, then three
// tokens twice.
const llamaTokens = "1 5 6 7 5 6 7"

// llamaFamilyViews runs every view on one Llama-family fixture (tokens as
// ids: the fixtures have no tokenizer files, so -text is refused) and
// returns how many cells the text view's heatmaps draw masked: -summary
// names the architecture and the attention, lists each head's key-value
// head and stops there; the default view with -circuits and -ablate shows
// the tokens and every section; -json, the page's data and -png carry the
// key-value heads, the family and the heads' heatmaps, a PNG cell out of
// the window drawn masked.
func llamaFamilyViews(t *testing.T, c llamaFixture) int {
	t.Helper()
	dir := filepath.Join("..", "..", "open", "hf", "testdata", c.variant)
	out := string(runNoted(t, "-checkpoint", dir, "-summary", "-examples", "2", "-color", "never"))
	if text := prose(out); !strings.Contains(text, c.source+", tokenizer none (96 token ids)") || !strings.Contains(text, c.family) || strings.Contains(out, "sequence (") {
		t.Errorf("%s -summary: want %q, %q and nothing past the heads:\n%s", c.variant, c.source, c.family, out)
	}
	if got, want := kvColumn(out), slices.Concat(c.kv, c.kv); !slices.Equal(got, want) {
		t.Errorf("%s -summary: kv column %v, want %v:\n%s", c.variant, got, want, out)
	}
	out = string(runNoted(t, "-checkpoint", dir, "-tokens", llamaTokens, "-circuits", "-ablate", "-examples", "2", "-color", "never"))
	for _, want := range []string{"token       <1>  <5>  <6>  <7>  <5>", "direct logit attribution", "logit lens", "composition", "Δloss", "layer 1 head 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("%s -circuits -ablate lacks %q:\n%s", c.variant, want, out)
		}
	}
	if err := run([]string{"-checkpoint", dir, "-text", "hi"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "give token ids (-tokens)") {
		t.Errorf("%s -text without a tokenizer: %v", c.variant, err)
	}
	png, page := filepath.Join(t.TempDir(), "heads.png"), filepath.Join(t.TempDir(), "page.html")
	var doc struct {
		Family string  `json:"family"`
		KVHead []int   `json:"kv_head"`
		Heads  [][]any `json:"heads"`
	}
	if err := json.Unmarshal(runNoted(t, "-checkpoint", dir, "-tokens", llamaTokens, "-examples", "2", "-json", "-png", png, "-html", page), &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(doc.Family, c.family) || !slices.Equal(doc.KVHead, c.kv) || len(doc.Heads) != 2 || len(doc.Heads[1]) != 4 {
		t.Errorf("%s -json: family %q, kv_head %v, %d layers of heads; want one ending %q, %v, 2 x 4", c.variant, doc.Family, doc.KVHead, len(doc.Heads), c.family, c.kv)
	}
	var data struct {
		Inspect struct {
			KVHead []int `json:"kv_head"`
		} `json:"inspect"`
	}
	if raw, err := os.ReadFile(page); err != nil || json.Unmarshal(blob(t, raw), &data) != nil || !slices.Equal(data.Inspect.KVHead, c.kv) {
		t.Errorf("%s -html: the page's kv_head %v (%v), want %v", c.variant, data.Inspect.KVHead, err, c.kv)
	}
	checkWindowPNG(t, dir, png, c.window)
	return strings.Count(out[strings.Index(out, "heatmaps: "):strings.Index(out, "prev = previous-token")], render.MaskedGlyph)
}

// kvColumn is the kv column of the heads' table in a text view.
func kvColumn(out string) []int {
	var kv []int
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "layer" && f[2] == "kv" {
			for _, row := range lines[i+1:] {
				f := strings.Fields(row)
				if len(f) < 3 {
					break
				}
				n, err := strconv.Atoi(f[2])
				if err != nil {
					break
				}
				kv = append(kv, n)
			}
		}
	}
	return kv
}

// checkWindowPNG checks the -png of llamaTokens on the model in dir: the
// layout of its 2 x 4 heads, and the last query's first key drawn masked
// (the colour of a key after its query) exactly when the window hides it.
func checkWindowPNG(t *testing.T, dir, path string, window int) {
	t.Helper()
	r, err := buildReport(report.Options{Checkpoint: dir, Tokens: llamaTokens, Samples: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := render.GridLayout(r.Figure())
	if err != nil {
		t.Fatal(err)
	}
	img := readPNG(t, path)
	if l.Layers != 2 || l.Heads != 4 || img.Bounds().Size() != l.Size() {
		t.Fatalf("%s -png: image %v, layout %+v", dir, img.Bounds(), l)
	}
	at := func(query, key int) color.RGBA {
		c := l.Cell(1, 2, query, key)
		return rgba(img, c.Min.Add(c.Size().Div(2)))
	}
	last := len(strings.Fields(llamaTokens)) - 1
	if hidden := last >= window && window > 0; (at(last, 0) == at(0, 1)) != hidden {
		t.Errorf("%s -png: key 0 of query %d is %v, a masked cell %v; the window %d hides it: %t", dir, last, at(last, 0), at(0, 1), window, hidden)
	}
}

// TestRotaryLongContext: -circuits and -ablate run on a rotary model whose
// max_position_embeddings is 131072, each analysis sized by its own
// lengths (at the context, prefix matching needed terabytes and ablation
// was refused at 16 TiB).
func TestRotaryLongContext(t *testing.T) {
	dir := editedFixture(t, "mistral", `"max_position_embeddings": 64`, `"max_position_embeddings": 131072`)
	out := string(runNoted(t, "-checkpoint", dir, "-circuits", "-ablate", "-examples", "2", "-color", "never"))
	for _, want := range []string{"prefix matching on 2 sequences", "logit lens", "Δloss"} {
		if !strings.Contains(out, want) {
			t.Errorf("-circuits -ablate at a context of 131072 lacks %q:\n%s", want, out)
		}
	}
}

// editedFixture is a copy of the open/hf/testdata directory variant whose
// config.json has each text fromTo[2i] replaced by fromTo[2i+1].
func editedFixture(t *testing.T, variant string, fromTo ...string) string {
	t.Helper()
	src := filepath.Join("..", "..", "open", "hf", "testdata", variant)
	dir := filepath.Join(t.TempDir(), variant)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; e.Name() == "config.json" && i+1 < len(fromTo); i += 2 {
			if !strings.Contains(string(raw), fromTo[i]) {
				t.Fatalf("%s/config.json holds no %s", src, fromTo[i])
			}
			raw = []byte(strings.Replace(string(raw), fromTo[i], fromTo[i+1], 1))
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
