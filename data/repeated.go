package data

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/tokenizer"
)

// RepeatedTokensName is the name of the task a model trained elsewhere is
// scored on.
const RepeatedTokensName = "repeated-tokens"

// DefaultRepeatedHalf is the random tokens in each copy of a repeated-tokens
// example, as TransformerLens's induction-head tutorial draws them.
const DefaultRepeatedHalf = 50

// RepeatedTokens is the task the heads of a model trained elsewhere are
// scored on, where the induction papers score them: the beginning-of-text
// token when the tokenizer has one, Half distinct tokens drawn uniformly
// from the tokenizer's ordinary tokens (neither its BOS nor any of the
// model's end-of-text ids), then the same Half again. The second copy is scored from its second token on: each of
// those predictions repeats the token after the current one's earlier
// occurrence, which a model can only know by induction. A tokenizer of
// fewer than Half ordinary tokens (a character model of 4 letters) draws
// them with replacement (WithReplacement, Note), so every draw ends.
type RepeatedTokens struct {
	Half  int
	Tok   tokenizer.Tokenizer
	vocab int   // the model's vocabulary, at least the tokenizer's
	ends  []int // end-of-text ids besides the tokenizer's EOS
}

// NewRepeatedTokens is the repeated-tokens task over tok's tokens for a
// model of vocab ids whose texts end at any of ends (besides tok.EOS(): a
// Llama 3 instruct model lists several).
func NewRepeatedTokens(tok tokenizer.Tokenizer, vocab, half int, ends []int) RepeatedTokens {
	return RepeatedTokens{Half: half, Tok: tok, vocab: vocab, ends: ends}
}

func (t RepeatedTokens) Name() string { return RepeatedTokensName }
func (t RepeatedTokens) Vocab() int   { return t.vocab }

// SeqLen is the tokens fed: the optional BOS and both copies, less the last
// token, which is only a target.
func (t RepeatedTokens) SeqLen() int { return t.prefix() + 2*t.Half - 1 }

func (t RepeatedTokens) prefix() int {
	if t.Tok.BOS() >= 0 {
		return 1
	}
	return 0
}

// Label is the token's text: "␣" for each space (GPT-2's tokens mostly
// start with one), the rest raw, as the text task's labels; an id the
// tokenizer does not have is "<id>".
func (t RepeatedTokens) Label(id int) string { return TokenLabel(t.Tok, id) }

// TokenLabel is a tokenizer's token as a label: its text with "␣" for each
// space, raw otherwise (whoever shows it escapes it); "<id>" outside the
// tokenizer.
func TokenLabel(tok tokenizer.Tokenizer, id int) string {
	if id < 0 || id >= tok.Size() {
		return "<" + strconv.Itoa(id) + ">"
	}
	return strings.ReplaceAll(string(tok.Token(id)), " ", "␣")
}

func (t RepeatedTokens) Sample(rng *rand.Rand, tokens, targets []int, mask []float64) {
	p := t.prefix()
	seq := make([]int, p+2*t.Half)
	if p == 1 {
		seq[0] = t.Tok.BOS()
	}
	n, skip := t.pool()
	distinct := !t.WithReplacement()
	for i := range t.Half {
		id := DrawExcept(rng, n, skip)
		if distinct {
			skip = insertSorted(skip, id)
		}
		seq[p+i], seq[p+t.Half+i] = id, id
	}
	copy(tokens, seq[:len(seq)-1])
	copy(targets, seq[1:])
	for i := range mask {
		// Position i predicts seq[i+1]; from the second copy's first token on
		// it repeats a token seen Half positions earlier.
		mask[i] = 0
		if i >= p+t.Half {
			mask[i] = 1
		}
	}
}

// Ordinary is how many ids of the tokenizer a copy draws from: all but its
// BOS and the end-of-text ids.
func (t RepeatedTokens) Ordinary() int {
	return t.Tok.Size() - len(t.specials())
}

// WithReplacement reports whether a copy draws its tokens with
// replacement: the tokenizer has fewer ordinary tokens than Half (a
// character model of 4 letters), so Half distinct ones do not exist.
func (t RepeatedTokens) WithReplacement() bool { return t.Ordinary() < t.Half }

// Note says how the draw departs from Half distinct ordinary tokens, for
// the views; "" when it does not.
func (t RepeatedTokens) Note() string {
	switch {
	case t.Ordinary() == 0:
		return fmt.Sprintf("the tokenizer has no ordinary tokens (every id is its BOS or an end of text), so each copy draws its %d tokens from every id, with replacement", t.Half)
	case t.WithReplacement():
		return fmt.Sprintf("the tokenizer has %s, fewer than the %d distinct ones a copy needs, so they are drawn with replacement and a token may recur within a copy", msg.Count(t.Ordinary(), "ordinary token"), t.Half)
	}
	return ""
}

// pool is what a copy draws from: the ids of [0, n) not in skip (sorted).
// Those are the ordinary tokens, or when there are none every id of the
// tokenizer (of the model, for an empty tokenizer).
func (t RepeatedTokens) pool() (n int, skip []int) {
	switch {
	case t.Ordinary() > 0:
		return t.Tok.Size(), t.specials()
	case t.Tok.Size() > 0:
		return t.Tok.Size(), nil
	}
	return max(t.vocab, 1), nil
}

// specials are the tokenizer's ids a copy never draws, sorted: its BOS,
// its EOS and the other end-of-text ids.
func (t RepeatedTokens) specials() []int {
	var out []int
	for _, id := range append([]int{t.Tok.BOS(), t.Tok.EOS()}, t.ends...) {
		if id >= 0 && id < t.Tok.Size() && !slices.Contains(out, id) {
			out = insertSorted(out, id)
		}
	}
	return out
}

// insertSorted is the sorted s with id added.
func insertSorted(s []int, id int) []int {
	i, _ := slices.BinarySearch(s, id)
	return slices.Insert(s, i, id)
}

// MaxRejections bounds DrawExcept's draws by rejection: past it the
// draw ends in one step whatever the generator gives.
const MaxRejections = 64

// DrawExcept draws an id of [0, n) that is not in skip (sorted ascending,
// distinct, within [0, n) and fewer than n), uniformly. It draws as the
// tasks always did, rng.IntN(n) until an id is not skipped, so a seed
// gives the same ids, but at most MaxRejections times: then it takes the
// k-th id not skipped for a uniform k, which is as uniform and ends.
func DrawExcept(rng *rand.Rand, n int, skip []int) int {
	for range MaxRejections {
		id := rng.IntN(n)
		if _, found := slices.BinarySearch(skip, id); !found {
			return id
		}
	}
	id := rng.IntN(n - len(skip))
	for _, s := range skip {
		if s > id {
			break
		}
		id++ // s is skipped: the k-th free id lies one further on
	}
	return id
}
