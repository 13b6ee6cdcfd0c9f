package data

import (
	"math/rand/v2"
	"slices"
	"testing"
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
