package data

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attnscope/attnscope/tokenizer"
)

// letters is a tokenizer of 26 letters, a space token and BOS (27) and EOS
// (28) specials, or none with bos false.
type letters struct{ bos bool }

func (l letters) Encode(string) ([]int, error) { return nil, nil }
func (l letters) Token(id int) []byte {
	switch {
	case id < 26:
		return []byte{byte('a' + id)}
	case id == 26:
		return []byte(" x")
	case id == 27:
		return []byte("<s>")
	}
	return []byte("</s>")
}
func (l letters) Size() int    { return 29 }
func (l letters) Name() string { return "letters" }
func (l letters) EOS() int     { return 28 }
func (l letters) BOS() int {
	if l.bos {
		return 27
	}
	return -1
}

// TestRepeatedTokens: an example is [BOS] then Half ordinary tokens (never a
// special: BOS, EOS or another end-of-text id; none twice) then the same again; the targets are the next tokens; exactly
// the positions of the second copy are scored, and each scored target is
// the token after the current token's earlier occurrence; labels show
// spaces as "␣".
func TestRepeatedTokens(t *testing.T) {
	for _, bos := range []bool{true, false} {
		ends := []int{28, 3, 7} // the tokenizer's EOS and two more
		task := NewRepeatedTokens(letters{bos}, 32, 5, ends)
		p := 0
		if bos {
			p = 1
		}
		if task.SeqLen() != p+9 || task.Vocab() != 32 || task.Name() != "repeated-tokens" {
			t.Fatalf("bos %t: SeqLen %d, Vocab %d, Name %s", bos, task.SeqLen(), task.Vocab(), task.Name())
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 50 {
			n := task.SeqLen()
			tokens, targets, mask := make([]int, n), make([]int, n), make([]float64, n)
			task.Sample(rng, tokens, targets, mask)
			if bos && tokens[0] != 27 {
				t.Fatalf("first token %d, want BOS 27", tokens[0])
			}
			for i := p; i < n; i++ {
				if slices.Contains(ends, tokens[i]) || bos && tokens[i] == 27 {
					t.Fatalf("special token %d drawn at %d: %v", tokens[i], i, tokens)
				}
				if i < p+5 && slices.Contains(tokens[p:i], tokens[i]) {
					t.Fatalf("token %d twice in the first copy: %v", tokens[i], tokens)
				}
			}
			for i := range n {
				if i+1 < n && targets[i] != tokens[i+1] {
					t.Fatalf("target %d = %d, token %d = %d", i, targets[i], i+1, tokens[i+1])
				}
				if want := i >= p+5; (mask[i] == 1) != want {
					t.Fatalf("mask %v: position %d scored %v", mask, i, mask[i])
				}
				if mask[i] == 1 && targets[i] != tokens[i-5+1] {
					t.Fatalf("scored target %d at %d is not the token after %d's earlier occurrence: %v", targets[i], i, tokens[i], tokens)
				}
			}
		}
	}
	if got := (RepeatedTokens{Tok: letters{}}).Label(26); got != "␣x" {
		t.Errorf("label of \" x\" = %q, want ␣x", got)
	}
	if got := TokenLabel(letters{}, 40); got != "<40>" {
		t.Errorf("label of an id past the tokenizer = %q", got)
	}
}

// TestRepeatedTokensSmallVocabulary: a tokenizer of fewer ordinary tokens
// than a copy needs (1, 2, 4, 30 or 40 ids, with and without BOS and EOS
// among them, or every id special) still draws an example, promptly: a
// copy of ordinary tokens with replacement, the second copy the same, and
// Note saying so; with enough ordinary tokens the copy stays distinct and
// Note is empty. A draw that would hang fails the test after 20 s.
func TestRepeatedTokensSmallVocabulary(t *testing.T) {
	type tc struct {
		name     string
		tok      tokenizer.Tokenizer
		ends     []int
		ordinary int
	}
	var cases []tc
	for _, n := range []int{1, 2, 4, 30, 40} {
		cases = append(cases, tc{fmt.Sprintf("%d ids", n), tokenizer.IDs(n), nil, n})
		if n > 2 {
			cases = append(cases, tc{fmt.Sprintf("%d ids, BOS 0, EOS 1", n), specials{tokenizer.IDs(n), 0, 1}, []int{1}, n - 2})
		}
	}
	cases = append(cases, tc{"every id special", specials{tokenizer.IDs(2), 0, 1}, []int{1}, 0})
	for _, c := range cases {
		task := NewRepeatedTokens(c.tok, c.tok.Size(), DefaultRepeatedHalf, c.ends)
		if task.Ordinary() != c.ordinary {
			t.Errorf("%s: Ordinary() = %d, want %d", c.name, task.Ordinary(), c.ordinary)
		}
		if note := task.Note(); !strings.Contains(note, "with replacement") {
			t.Errorf("%s: Note() = %q, want it to say the tokens are drawn with replacement", c.name, note)
		}
		tokens, targets, mask := drawWithin(t, c.name, task)
		p := task.prefix()
		for i := p; i < p+task.Half; i++ {
			if id := tokens[i]; c.ordinary > 0 && (id == c.tok.BOS() || id == c.tok.EOS() || slices.Contains(c.ends, id)) || id < 0 || id >= c.tok.Size() {
				t.Fatalf("%s: token %d at %d is special or outside the tokenizer: %v", c.name, id, i, tokens)
			}
			if i+task.Half < len(tokens) && tokens[i+task.Half] != tokens[i] {
				t.Fatalf("%s: the second copy differs at %d: %v", c.name, i, tokens)
			}
		}
		for i := range mask {
			if mask[i] == 1 && targets[i] != tokens[i-task.Half+1] {
				t.Fatalf("%s: scored target %d at %d is not the token Half earlier: %v", c.name, targets[i], i, tokens)
			}
		}
	}
	task := NewRepeatedTokens(tokenizer.IDs(40), 40, 40, nil)
	if task.WithReplacement() || task.Note() != "" {
		t.Errorf("40 ids, Half 40: WithReplacement %t, Note %q; want distinct tokens and no note", task.WithReplacement(), task.Note())
	}
	tokens, _, _ := drawWithin(t, "40 ids, Half 40", task)
	if first := slices.Sorted(slices.Values(tokens[:40])); !slices.Equal(first, seq(40)) {
		t.Errorf("40 ids, Half 40: the first copy is not every id once: %v", tokens[:40])
	}
}

// specials is a tokenizer with the BOS and EOS ids given.
type specials struct {
	tokenizer.Tokenizer
	bos, eos int
}

func (s specials) BOS() int { return s.bos }
func (s specials) EOS() int { return s.eos }

// drawWithin draws one example of task, failing the test when the draw does
// not end within 20 s.
func drawWithin(t *testing.T, name string, task RepeatedTokens) (tokens, targets []int, mask []float64) {
	t.Helper()
	n := task.SeqLen()
	tokens, targets, mask = make([]int, n), make([]int, n), make([]float64, n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		task.Sample(rand.New(rand.NewPCG(1, 2)), tokens, targets, mask)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: drawing an example of %d positions did not end in 20 s", name, n)
	}
	return tokens, targets, mask
}

// seq is 0, 1, ..., n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestDrawExcept: every id not skipped is drawn, none skipped, even when
// all but one id is skipped (the draw past MaxRejections); and the draw
// is the plain rejection draw's while it rejects fewer times, so a seed
// gives what it always gave.
func TestDrawExcept(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	skip := []int{0, 1, 2, 4, 5, 6, 7, 8, 9} // only 3 is free among 10
	for range 200 {
		if id := DrawExcept(rng, 10, skip); id != 3 {
			t.Fatalf("DrawExcept among 10 skipping all but 3 drew %d", id)
		}
	}
	skip = []int{0, 2, 6}
	counts := map[int]int{}
	for range 7000 {
		counts[DrawExcept(rng, 8, skip)]++
	}
	for id := range 8 {
		if _, skipped := slices.BinarySearch(skip, id); skipped != (counts[id] == 0) {
			t.Errorf("id %d drawn %d times (skipped: %t)", id, counts[id], skipped)
		}
	}
	skip = nil
	for id := 0; id < 1000; id += 3 {
		skip = append(skip, id)
	}
	a, b := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
	for range 100 {
		want := b.IntN(1000)
		for want%3 == 0 {
			want = b.IntN(1000)
		}
		if got := DrawExcept(a, 1000, skip); got != want {
			t.Fatalf("DrawExcept drew %d, the rejection draw %d", got, want)
		}
	}
}
