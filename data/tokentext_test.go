package data

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/tokenizer"
)

// TestTokenText: read through a tokenizer, the text task's ids are the
// tokenizer's over the model's vocabulary, training windows come from the
// first 90% of the tokens and held-out ones from the last 10%, every
// position scored, labels and Encode the tokenizer's.
func TestTokenText(t *testing.T) {
	tok, err := tokenizer.NewChars([]string{"a", "b", "A", "B", "c"}) // ids in this order, not code points
	if err != nil {
		t.Fatal(err)
	}
	path := writeText(t, "t.txt", strings.Repeat("ab", 450)+strings.Repeat("AB", 50))
	task, err := NewTokenText(TaskConfig{Name: Text, Path: path, Length: 8}, tok, 7)
	if err != nil {
		t.Fatal(err)
	}
	if task.Vocab() != 7 || task.SeqLen() != 8 || task.Label(2) != "A" || task.Label(6) != "<6>" || !IsText(task) {
		t.Fatalf("vocab %d, length %d, labels %q %q", task.Vocab(), task.SeqLen(), task.Label(2), task.Label(6))
	}
	if ids, _, err := Encode(task, "abc"); err != nil || len(ids) != 3 || ids[2] != 4 {
		t.Errorf("Encode(abc) = %v, %v", ids, err)
	}
	for _, part := range []struct {
		task       Task
		lo, hi, id int // the ids a window holds: lo..hi
	}{{task, 0, 1, 0}, {HeldOut(task), 2, 3, 2}} {
		rng := rand.New(rand.NewPCG(1, 2))
		tokens, targets, mask := make([]int, 8), make([]int, 8), make([]float64, 8)
		for range 100 {
			part.task.Sample(rng, tokens, targets, mask)
			for i := range tokens {
				if tokens[i] < part.lo || tokens[i] > part.hi || mask[i] != 1 || (i < 7 && targets[i] != tokens[i+1]) {
					t.Fatalf("window %v, targets %v, mask %v: not ids %d..%d in order", tokens, targets, mask, part.lo, part.hi)
				}
			}
		}
	}
}

// TestTokenTextFaults: a text the task cannot read through the tokenizer
// is one line naming the problem.
func TestTokenTextFaults(t *testing.T) {
	tok, err := tokenizer.NewChars([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("ab", 100)
	path := writeText(t, "t.txt", text)
	recorded, _, err := RecordText(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := recorded
	changed.SHA256 = strings.Repeat("0", 64)
	cases := []struct {
		name  string
		cfg   TaskConfig
		vocab int
		want  []string
	}{
		{"vocabulary smaller than the tokenizer", TaskConfig{Name: Text, Path: path, Length: 8}, 1, []string{"has 2 tokens, more than the model's vocabulary of 1"}},
		{"a character the tokenizer lacks", TaskConfig{Name: Text, Path: writeText(t, "c.txt", text+"c"), Length: 8}, 2, []string{"tokenizing with characters (2 tokens)", `"c"`}},
		{"too short", TaskConfig{Name: Text, Path: writeText(t, "s.txt", "abab"), Length: 8}, 2, []string{"4 tokens is too short for task.length = 8"}},
		{"content changed", TaskConfig{Name: Text, Path: path, Length: 8, File: changed}, 2, []string{"the file's content differs from what training read"}},
		{"characters recorded", TaskConfig{Name: Text, Path: path, Length: 8, Chars: "ab"}, 2, []string{"task.chars: a text read through a tokenizer has no characters of its own"}},
	}
	for _, c := range cases {
		_, err := NewTokenText(c.cfg, tok, c.vocab)
		msgtest.Refusal(t, c.name, err, c.want...)
	}
}
