package data

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeText(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTextTask: the vocabulary is the file's characters in code point
// order; training windows lie in the first 90% and held-out windows in the
// last 10%, each target the next character, every position scored.
func TestTextTask(t *testing.T) {
	text := strings.Repeat("abcdefghij", 90) + strings.Repeat("ABCDEFGHIJ", 10) // the held-out tenth is upper case
	path := writeText(t, "t.txt", text)
	task, err := New(TaskConfig{Name: Text, Path: path, Length: 8})
	if err != nil {
		t.Fatal(err)
	}
	if task.Vocab() != 20 || task.SeqLen() != 8 || task.Label(0) != "A" || task.Label(19) != "j" {
		t.Fatalf("vocab %d, length %d, labels %q %q", task.Vocab(), task.SeqLen(), task.Label(0), task.Label(19))
	}
	check := func(task Task, upper bool) {
		rng := rand.New(rand.NewPCG(1, 2))
		tokens, targets, mask := make([]int, 8), make([]int, 8), make([]float64, 8)
		for range 200 {
			task.Sample(rng, tokens, targets, mask)
			for i := range tokens {
				if (tokens[i] < 10) != upper || mask[i] != 1 {
					t.Fatalf("window %v (mask %v) is not from the %s part", tokens, mask, map[bool]string{true: "held-out", false: "training"}[upper])
				}
				if i+1 < len(tokens) && targets[i] != tokens[i+1] {
					t.Fatalf("targets %v are not the tokens %v shifted", targets, tokens)
				}
			}
		}
	}
	check(task, false)
	check(HeldOut(task), true)
	set := EvalSet(task, 50, 3)
	for _, id := range set.Tokens {
		if id >= 10 {
			t.Fatalf("the held-out set holds %q, from the training part", task.Label(id))
		}
	}
	ids, ok, err := Encode(task, "Jab")
	if !ok || err != nil || len(ids) != 3 || ids[0] != 9 || ids[1] != 10 {
		t.Errorf("Encode(Jab) = %v, %v, %v", ids, ok, err)
	}
	if _, _, err := Encode(task, "a?"); err == nil || !strings.Contains(err.Error(), `"?"`) {
		t.Errorf("Encode of a character outside the vocabulary: %v", err)
	}
	// Labels are the real characters (the views escape them), but a space.
	for r, want := range map[rune]string{' ': "␣", '\n': "\n", 0x1b: "\x1b", 0x9b: "\u009b", 0x202e: "\u202e", 'é': "é"} {
		if got := CharLabel(r); got != want {
			t.Errorf("CharLabel(%q) = %q, want %q", r, got, want)
		}
	}
	if got := task.Label(20); got != "<20>" {
		t.Errorf("the label of an id outside the vocabulary is %q, want <20>", got)
	}
}

// TestTextFaults: each bad file is one line naming task.path and the problem.
func TestTextFaults(t *testing.T) {
	dir := t.TempDir()
	large := filepath.Join(dir, "large.txt")
	f, err := os.Create(large)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxTextBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	good := writeText(t, "good.txt", strings.Repeat("the quick brown fox ", 20))
	for _, c := range []struct {
		cfg  TaskConfig
		want string
	}{
		{TaskConfig{Name: Text, Length: 8}, "task.path: the text task needs a UTF-8 text file"},
		{TaskConfig{Name: Text, Path: filepath.Join(dir, "missing.txt"), Length: 8}, "no such file"},
		{TaskConfig{Name: Text, Path: writeText(t, "empty.txt", ""), Length: 8}, "the file is empty"},
		{TaskConfig{Name: Text, Path: writeText(t, "bin.txt", "ab\x00cd"), Length: 8}, "not UTF-8 text"},
		{TaskConfig{Name: Text, Path: writeText(t, "latin1.txt", "caf\xe9"), Length: 8}, "not UTF-8 text"},
		{TaskConfig{Name: Text, Path: large, Length: 8}, "bytes"},
		{TaskConfig{Name: Text, Path: dir, Length: 8}, "not a regular file"},
		{TaskConfig{Name: Text, Path: writeText(t, "short.txt", "tiny text"), Length: 8}, "too short for task.length = 8"},
		{TaskConfig{Name: Text, Path: good, Length: 8, Chars: "xyz"}, "differ from the 3 the model was trained on"},
		{TaskConfig{Name: "copy", Path: good, Length: 8, Symbols: 4}, "task.path = "},
	} {
		_, err := New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want one line containing %q", c.cfg, err, c.want)
		}
		if c.cfg.Path != "" && c.cfg.Name == Text && err != nil && !strings.Contains(err.Error(), "task.path = ") {
			t.Errorf("%v does not name task.path", err)
		}
	}
}
