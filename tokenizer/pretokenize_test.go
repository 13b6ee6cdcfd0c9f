package tokenizer

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// gpt2Pattern is GPT-2's pre-tokenizer pattern (its encoder.py's), in the
// syntax regexp2 and Oniguruma read.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// handWritten are the pre-tokenizers written by hand and the patterns
// they stand for.
var handWritten = []struct {
	name, pattern string
	pieceLen      func(string) int
}{
	{"GPT-2", gpt2Pattern, gpt2PieceLen},
	{"Llama 3", llama3Pattern, handSplits[llama3Pattern].pieceLen},
	{"Qwen 2", qwen2Pattern, handSplits[qwen2Pattern].pieceLen},
}

// pieces is how pre cuts s.
func pieces(t testing.TB, pre preTokenizer, s string) []string {
	t.Helper()
	var out []string
	err := pre(s, 0, func(piece string, _ int) error {
		out = append(out, piece)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// regexSplit is a Split by pattern, Isolated, run by regexp2.
func regexSplit(t testing.TB, pattern string) preTokenizer {
	t.Helper()
	find, err := compileSplitRegex("pattern", pattern)
	if err != nil {
		t.Fatal(err)
	}
	return splitBy(find, behaviorIsolated, false)
}

// checkSamePieces fails when the hand-written split and regexp2's cut s
// differently, showing where.
func checkSamePieces(t testing.TB, name string, hand, regex preTokenizer, s string) {
	t.Helper()
	got, want := pieces(t, hand, s), pieces(t, regex, s)
	if !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: the hand-written split and regexp2 part at piece %d: %q against %q",
			name, i, got[i:min(i+3, len(got))], want[i:min(i+3, len(want))])
	}
}

// TestHandWrittenSplitsEqualRegexp2: the pre-tokenizers written by hand
// (GPT-2's, Llama 3's and Qwen 2's patterns), kept as a fast path, cut the
// 111 KB corpus and random text (UTF-8 or not) into exactly the pieces
// regexp2 cuts it into by the patterns themselves.
func TestHandWrittenSplitsEqualRegexp2(t *testing.T) {
	corpus := llamaCorpus(t)
	rng := rand.New(rand.NewPCG(46, 1))
	for _, h := range handWritten {
		hand, regex := byPieceLen(h.pieceLen), regexSplit(t, h.pattern)
		checkSamePieces(t, h.name, hand, regex, corpus)
		for range 200 {
			checkSamePieces(t, h.name, hand, regex, randomText(rng, 20))
		}
		checkSamePieces(t, h.name, hand, regex, "a\xffb\xe4\xb8 \xc3'S'll\u0085\ufeff 12345\r\n\r\n  x")
	}
}

// FuzzHandWrittenSplits: on any text the hand-written splits and regexp2
// agree.
func FuzzHandWrittenSplits(f *testing.F) {
	for _, seed := range []string{"", " the  the", "e\u0301\r\n\r\n  12345", "a\xffb\xe4\xb8", "'S 'll\u0085\ufeff", "x \t\n y"} {
		f.Add(seed)
	}
	regexes := make([]preTokenizer, len(handWritten))
	for i, h := range handWritten {
		regexes[i] = regexSplit(f, h.pattern)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, h := range handWritten {
			checkSamePieces(t, h.name, byPieceLen(h.pieceLen), regexes[i], s)
		}
	})
}
