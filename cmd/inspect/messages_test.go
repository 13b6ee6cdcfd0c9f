package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
)

// TestPatchingUndefined: on a Mistral of window 1 the corruption of the
// first copy cannot move the scored logits, so no head has a fall to
// restore: -circuits shows every other measure, the patched column as
// n/a and the reason once, -json has restored null and the reason, and
// -png and -html are written (it aborted the whole view with "nothing to
// restore").
func TestPatchingUndefined(t *testing.T) {
	plainEnv(t, "100")
	dir := editedFixture(t, "mistral", `"sliding_window": 4`, `"sliding_window": 1`)
	var stdout strings.Builder
	if err := run([]string{dir, "-circuits", "-examples", "2", "-color", "never", "-summary"}, &stdout, io.Discard); err != nil {
		t.Fatalf("-circuits on a window of 1: %v", err)
	}
	out := strings.Join(strings.Fields(stdout.String()), " ")
	for _, want := range []string{"activation patching: undefined, patched is n/a: corrupting the first copy leaves the correct token's logit where it was",
		"0 0 ", " n/a 0 1 ", "direct logit attribution", "in-context learning", "logit lens", "composition"} {
		if !strings.Contains(out, want) {
			t.Errorf("-circuits on a window of 1 lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	png, page := filepath.Join(t.TempDir(), "heads.png"), filepath.Join(t.TempDir(), "page.html")
	if err := run([]string{dir, "-circuits", "-examples", "2", "-json", "-png", png, "-html", page}, &stdout, io.Discard); err != nil {
		t.Fatalf("-circuits -json on a window of 1: %v", err)
	}
	var doc struct {
		Circuits struct {
			Patching map[string]json.RawMessage `json:"patching"`
		} `json:"circuits"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil {
		t.Fatal(err)
	}
	p := doc.Circuits.Patching
	if string(p["restored"]) != "null" || !strings.Contains(string(p["undefined"]), "no fall to restore") || p["clean_logit"] == nil {
		t.Errorf("-json patching on a window of 1: %v; want restored null, the reason in undefined and the logits", p)
	}
	for _, f := range []string{png, page} {
		if info, err := os.Stat(f); err != nil || info.Size() == 0 {
			t.Errorf("-circuits on a window of 1 wrote no %s: %v", f, err)
		}
	}
}

// TestTextErrors: -text is checked as sample's -prompt is, and what it
// causes names -text, never -tokens: a byte that is not UTF-8 by its
// offset (it was read silently), an empty -text, and text of more tokens
// than the model's context.
func TestTextErrors(t *testing.T) {
	dir := opentest.GPT2Dir(t, model.Config{Context: 16, DModel: 8, Heads: 2, Layers: 1, DFF: 16})
	refused(t, "-text not UTF-8", []string{dir, "-text", "the \xff cat"}, "-text: byte 4 (0xff) is not valid UTF-8; give UTF-8 text, or the ids with -tokens")
	refused(t, "-text empty", []string{dir, "-text", ""}, "-text is empty")
	_, _, err := runWithin(t, dir, "-text", strings.Repeat(" a", 20))
	msgtest.Refusal(t, "-text too long", err, "-text: 20 tokens is longer than the model's context of 16")
}

// TestTokenizerNotBuilt: a Llama whose tokenizer.json is of a kind not
// built opens on ids with a note giving the reason, and -text is refused
// with that reason, not with "the model has no tokenizer files".
func TestTokenizerNotBuilt(t *testing.T) {
	dir := editedFixture(t, "llama")
	writeFile(t, filepath.Join(dir, "tokenizer.json"), `{"version": "1.0", "model": {"type": "WordPiece", "vocab": {"a": 0}}}`)
	var stderr strings.Builder
	err := run([]string{dir, "-text", "hi"}, io.Discard, &stderr)
	if !msgtest.Refusal(t, "-text on a tokenizer not built", err, "-text: its tokenizer was not built (", "tokenizer.json", "WordPiece") {
		return
	}
	if strings.Contains(err.Error(), "no tokenizer files") || !strings.Contains(stderr.String(), "WordPiece") {
		t.Errorf("-text on a tokenizer not built: %v (notes %q); want the reason, not \"no tokenizer files\"", err, stderr.String())
	}
}

// writeFile writes content to path, failing the test on an error.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHalfGPT2Tokenizer: a GPT-2 directory holding vocab.json without
// merges.txt, or merges.txt without vocab.json, is refused naming the file
// missing (it opened with GPT-2's built-in tokenizer, whatever vocab.json
// said).
func TestHalfGPT2Tokenizer(t *testing.T) {
	for present, missing := range map[string]string{"vocab.json": "merges.txt", "merges.txt": "vocab.json"} {
		dir := opentest.GPT2Dir(t, model.Config{Context: 16, DModel: 8, Heads: 2, Layers: 1, DFF: 16})
		writeFile(t, filepath.Join(dir, present), opentest.DNAFiles[present])
		_, _, err := runWithin(t, dir, "-summary")
		msgtest.Refusal(t, present+" alone", err, filepath.Join(dir, present)+" has no "+missing+" beside it")
	}
}

// TestFlagsOfOtherKinds: a flag that does not apply to the model's kind is
// refused in one line naming the flag and the kind, before anything is
// read (-vocab and -data were ignored for a Hugging Face model, -data for
// a nanoGPT checkpoint); -graph refuses the flags it would ignore.
func TestFlagsOfOtherKinds(t *testing.T) {
	hfDir := filepath.Join("..", "..", "open", "hf", "testdata", "llama")
	nano := filepath.Join("..", "..", "open", "nanogpt", "testdata")
	text := filepath.Join(t.TempDir(), "text.txt")
	writeFile(t, text, "some text\n")
	meta := filepath.Join(nano, "meta.pkl")
	refused(t, "-vocab for Hugging Face", []string{hfDir, "-vocab", meta}, `-vocab "`+meta+`" names a nanoGPT character model's meta.pkl; `+hfDir+" is a Hugging Face model directory")
	refused(t, "-data for Hugging Face", []string{hfDir, "-data", text}, `-data "`+text+`": `+hfDir+" is a Hugging Face model directory", "reads no text file")
	ckpt := filepath.Join(nano, "bias", "ckpt.pt")
	refused(t, "-data for nanoGPT", []string{ckpt, "-data", text}, `-data "`+text+`": `+ckpt+" is a nanoGPT checkpoint", "reads no text file")
	refused(t, "-graph with -tokens", []string{hfDir, "-graph", "-tokens", "1 2", "-layer", "0"}, "-layer, -png, -tokens: -graph and -dot show the model's expression graph and take only -training-graph and -path")
}
