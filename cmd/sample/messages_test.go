package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// TestFlagsOfOtherKinds: -vocab and -data for a model trained elsewhere
// that reads neither are refused naming the flag and the model's kind,
// before anything is read (a Hugging Face model ignored both, a nanoGPT
// checkpoint -data); a Llama whose tokenizer.json is not built refuses
// -text with the reason, naming -text.
func TestFlagsOfOtherKinds(t *testing.T) {
	hfDir := filepath.Join("..", "..", "open", "hf", "testdata", "llama")
	nano := filepath.Join("..", "..", "open", "nanogpt", "testdata")
	text := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(text, []byte("some text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{hfDir, "-vocab", filepath.Join(nano, "meta.pkl")}, hfDir + " is a Hugging Face model directory, whose tokenizer is its own files"},
		{[]string{hfDir, "-data", text, "-n", "2"}, hfDir + " is a Hugging Face model directory, which reads no text file"},
		{[]string{filepath.Join(nano, "bias", "ckpt.pt"), "-data", text, "-n", "2"}, "is a nanoGPT checkpoint, which reads no text file"},
	} {
		out, notes, err := sampleNoted(t, c.args...)
		if msgtest.Refusal(t, strings.Join(c.args, " "), err, c.want) && (out != "" || notes != "") {
			t.Errorf("%q: wrote %q, noted %q before refusing", c.args, out, notes)
		}
	}
	dir := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors"} {
		raw, err := os.ReadFile(filepath.Join(hfDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"version": "1.0", "model": {"type": "WordPiece", "vocab": {"a": 0}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := sampleNoted(t, dir, "-text", "hi")
	msgtest.Refusal(t, "-text on a tokenizer not built", err, "-text: its tokenizer was not built (", "WordPiece")
}
