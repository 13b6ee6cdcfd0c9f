package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
	"github.com/attnscope/attnscope/rundir"
)

// runWithin runs the command, failing the test when it does not return
// within 20 s (it hung on small vocabularies).
func runWithin(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, notes bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(args, &out, &notes) }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("run %q did not return in 20 s", args)
	}
	return out.String(), notes.String(), err
}

// TestSmallVocabulary: a model trained elsewhere with fewer ordinary tokens
// than a copy of the repeated-tokens task needs (vocabularies of 1, 2, 4,
// 30 and 40 ids, without tokenizer files) shows its view, with -circuits,
// and says its tokens are drawn with replacement; a DNA model of 4 tokens
// shows -text too. Each of these never returned.
func TestSmallVocabulary(t *testing.T) {
	plainEnv(t, "100")
	for _, vocab := range []int{1, 2, 4, 30, 40} {
		dir := opentest.TinyGPT2Dir(t, vocab, nil)
		out, _, err := runWithin(t, dir, "-circuits", "-examples", "2", "-color", "never")
		if err != nil {
			t.Errorf("vocabulary of %d: %v", vocab, err)
			continue
		}
		note := fmt.Sprintf("the tokenizer has %s, fewer than the 50 distinct ones a copy needs, so they are drawn with replacement", msg.Count(vocab, "ordinary token"))
		if !strings.Contains(strings.Join(strings.Fields(out), " "), note) || !strings.Contains(out, "logit lens") {
			t.Errorf("vocabulary of %d: the view lacks %q or the circuits:\n%s", vocab, note, out)
		}
	}
	dna := opentest.TinyGPT2Dir(t, 4, opentest.DNAFiles)
	smallVocabularyPage(t, dna)
	out, _, err := runWithin(t, dna, "-text", "gattaca", "-color", "never")
	if err != nil || !strings.Contains(out, "sequence (from -text;") {
		t.Errorf("-text on a DNA model: %v\n%s", err, out)
	}
	if strings.Contains(out, "with replacement") {
		t.Errorf("-text scores the roles on the text given, yet the view notes the task's draw:\n%s", out)
	}
}

// smallVocabularyPage: the page of the 4-token model in dir says, under its
// roles, that the repeated tokens are drawn with replacement, as the text
// view does.
func smallVocabularyPage(t *testing.T, dir string) {
	t.Helper()
	page := filepath.Join(t.TempDir(), "dna.html")
	if _, _, err := runWithin(t, dir, "-examples", "2", "-html", page); err != nil {
		t.Fatalf("-html on a DNA model: %v", err)
	}
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "4 ordinary tokens, fewer than the 50 distinct ones a copy needs, so they are drawn with replacement") {
		t.Errorf("the page of a 4-token model does not say its tokens are drawn with replacement")
	}
}

// TestSmallVocabularyFineTuned: a lone checkpoint of a run that fine-tuned
// a 4-token model (its tokenizer left in the run directory, so it opens on
// ids) shows its view with the draw noted, as the model it came from does.
func TestSmallVocabularyFineTuned(t *testing.T) {
	plainEnv(t, "100")
	cfg := model.Config{Vocab: 4, Context: 128, DModel: 8, Heads: 2, Layers: 1,
		MLP: true, DFF: 16, QKVBias: true, OutBias: true, TieEmbeddings: true}
	m, err := model.New(cfg, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	run := rundir.DefaultConfig()
	run.InitFrom, run.Model = "dna", m.Config
	run.Task = data.TaskConfig{Name: data.Text, Path: "dna.txt", Length: 16}
	run.Init = initfrom.Record{Path: "/models/dna", Source: "Hugging Face GPT2LMHeadModel", Vocab: 4, Context: 128,
		Files:     []initfrom.FileRecord{{Path: "/models/dna/vocab.json", Size: 1, SHA256: strings.Repeat("0", 64)}},
		Tokenizer: []string{"vocab.json"}}
	ckpt := filepath.Join(t.TempDir(), "dna-tuned.safetensors")
	if err := checkpoint.Save(ckpt, m, run, 1); err != nil {
		t.Fatal(err)
	}
	out, _, err := runWithin(t, ckpt, "-summary", "-examples", "2", "-color", "never")
	if err != nil || !strings.Contains(out, "fine-tuned from") || !strings.Contains(strings.Join(strings.Fields(out), " "), "4 ordinary tokens, fewer than the 50 distinct ones a copy needs") {
		t.Errorf("a fine-tuned 4-token model: %v\n%s", err, out)
	}
}
