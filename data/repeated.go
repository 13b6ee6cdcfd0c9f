package data

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

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
// occurrence, which a model can only know by induction.
type RepeatedTokens struct {
	Half  int
	Tok   tokenizer.Tokenizer
	vocab int   // the model's vocabulary, at least the tokenizer's
	ends  []int // end-of-text ids besides the tokenizer's EOS
}

// NewRepeatedTokens is the repeated-tokens task over tok's tokens for a
// model of vocab ids whose texts end at any of ends (besides tok.EOS(): a
// Llama 3 instruct model lists several); half is at most the tokenizer's
// ordinary tokens.
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
	seen := make(map[int]bool, t.Half)
	for i := range t.Half {
		id := t.ordinary(rng)
		for seen[id] {
			id = t.ordinary(rng)
		}
		seen[id] = true
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

// ordinary draws an id of the tokenizer that is not a special token.
func (t RepeatedTokens) ordinary(rng *rand.Rand) int {
	for {
		id := rng.IntN(t.Tok.Size())
		if id != t.Tok.BOS() && id != t.Tok.EOS() && !slices.Contains(t.ends, id) {
			return id
		}
	}
}
