package tokenizer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// naiveGPT2 encodes text as GPT-2's own encoder does, step by step: split,
// write each piece's bytes with the byte-to-unicode table, then merge the
// lowest-ranked adjacent pair everywhere, left to right, until no pair
// has a rank. It is quadratic, and independent of the heap in mergeAll.
type naiveGPT2 struct {
	ranks map[[2]string]int
	vocab map[string]int
}

func newNaiveGPT2(t *testing.T) naiveGPT2 {
	t.Helper()
	vocab, err := parseVocab(gunzip(gpt2VocabGz))
	if err != nil {
		t.Fatal(err)
	}
	merges, _, err := parseMergesText(gunzip(gpt2MergesGz))
	if err != nil {
		t.Fatal(err)
	}
	ranks := make(map[[2]string]int, len(merges))
	for rank, m := range merges {
		ranks[m] = rank
	}
	return naiveGPT2{ranks: ranks, vocab: vocab}
}

func (n naiveGPT2) encode(text string) []int {
	var ids []int
	for _, piece := range gpt2Pieces(text) {
		var word []string
		for _, r := range byteLevelEncode([]byte(piece)) {
			word = append(word, string(r))
		}
		for {
			best, bestRank := [2]string{}, -1
			for i := 0; i+1 < len(word); i++ {
				pair := [2]string{word[i], word[i+1]}
				if rank, ok := n.ranks[pair]; ok && (bestRank < 0 || rank < bestRank) {
					best, bestRank = pair, rank
				}
			}
			if bestRank < 0 {
				break
			}
			var merged []string
			for i := 0; i < len(word); i++ {
				if i+1 < len(word) && word[i] == best[0] && word[i+1] == best[1] {
					merged = append(merged, best[0]+best[1])
					i++
				} else {
					merged = append(merged, word[i])
				}
			}
			word = merged
		}
		for _, w := range word {
			ids = append(ids, n.vocab[w])
		}
	}
	return ids
}

// byteLevelEncode writes bytes as the byte-to-unicode table's characters.
func byteLevelEncode(b []byte) string {
	var s strings.Builder
	for _, v := range b {
		s.WriteRune(byteRunes[v])
	}
	return s.String()
}

// randomText draws text from pieces that stress merging and splitting:
// runs of one or two characters, words, spaces of several kinds, numbers,
// CJK, emoji, combining marks, and bytes that are not UTF-8.
func randomText(rng *rand.Rand, parts int) string {
	atoms := []string{
		"a", "b", "ab", "the", " the", "ing", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u0085", "\u2028", "\ufeff",
		"'s", "'ll", "'", "0", "12", "½", "中", "文", "😀", "\u200d", "e\u0301", "\x00", "\x7f", "\xff", "\xe4\xb8",
		"=", "==", ".", ",", "ĠĠ", "Ā", "<|endoftext|>",
	}
	var s strings.Builder
	for range parts {
		atom := atoms[rng.IntN(len(atoms))]
		s.WriteString(strings.Repeat(atom, 1+rng.IntN(3)*rng.IntN(8)))
	}
	return s.String()
}

// TestMergeMatchesGPT2Definition: on random text with long runs, the heap
// merge gives the ids of GPT-2's definition, step by step (naiveGPT2), and
// the ids decode back to the text. Exact.
func TestMergeMatchesGPT2Definition(t *testing.T) {
	naive := newNaiveGPT2(t)
	tok := GPT2()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		text := randomText(rng, 1+rng.IntN(30))
		got, err := tok.Encode(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if want := naive.encode(text); firstDifference(got, want) >= 0 {
			t.Fatalf("%q: %v, GPT-2's definition gives %v", text, got, want)
		}
		if d := Decode(tok, got); string(d) != text {
			t.Fatalf("%q decodes to %q", text, d)
		}
	}
}

// TestRoundTripRandomUTF8: Decode(Encode(s)) == s for random UTF-8 drawn
// from every plane, and the encoding is the same when run again (the
// cache gives what merging gave).
func TestRoundTripRandomUTF8(t *testing.T) {
	tok := GPT2()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		runes := make([]rune, rng.IntN(60))
		for i := range runes {
			runes[i] = randomRune(rng)
		}
		text := string(runes)
		checkRoundTrip(t, tok, text)
	}
}

// randomRune is a valid character, from ASCII mostly, else anywhere.
func randomRune(rng *rand.Rand) rune {
	for {
		var r rune
		switch rng.IntN(4) {
		case 0:
			r = rune(rng.IntN(0x80))
		case 1:
			r = rune(rng.IntN(0x800))
		case 2:
			r = rune(rng.IntN(0x10000))
		default:
			r = rune(rng.IntN(utf8.MaxRune + 1))
		}
		if utf8.ValidRune(r) {
			return r
		}
	}
}

func checkRoundTrip(t *testing.T, tok Tokenizer, text string) {
	t.Helper()
	ids, err := tok.Encode(text)
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	if d := Decode(tok, ids); !bytes.Equal(d, []byte(text)) {
		t.Fatalf("%q decodes to %q", text, d)
	}
	again, err := tok.Encode(text)
	if err != nil || firstDifference(again, ids) >= 0 {
		t.Fatalf("%q encodes to %v, then to %v (%v)", text, ids, again, err)
	}
}

// FuzzGPT2RoundTrip: any string, UTF-8 or not, decodes back from its ids.
func FuzzGPT2RoundTrip(f *testing.F) {
	for _, seed := range []string{"", "hello world", "it's  \t\n", "中文😀e\u0301", "a\xffb\xe4\xb8", "\u0085\ufeff\u2028"} {
		f.Add(seed)
	}
	tok := GPT2()
	f.Fuzz(func(t *testing.T, text string) {
		checkRoundTrip(t, tok, text)
	})
}

// TestConcurrentEncode: goroutines sharing one tokenizer (and its cache)
// encode the same texts to the same ids as one alone does.
func TestConcurrentEncode(t *testing.T) {
	corpus := string(readTestdata(t, "gpt2_corpus.txt"))
	texts := strings.SplitAfter(corpus[:20000], "\n")
	want := make([][]int, len(texts))
	alone, err := parseGPT2Files(gunzip(gpt2VocabGz), gunzip(gpt2MergesGz), "vocab", "merges")
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if want[i], err = alone.Encode(text); err != nil {
			t.Fatal(err)
		}
	}
	shared := GPT2()
	errs := make(chan string, 4)
	for g := range 4 {
		go func() {
			for i := range texts {
				j := (i*7 + g) % len(texts) // each goroutine in its own order
				if got, err := shared.Encode(texts[j]); err != nil || firstDifference(got, want[j]) >= 0 {
					errs <- fmt.Sprintf("goroutine %d: %q encodes to %v (%v), want %v", g, texts[j], got, err, want[j])
					return
				}
			}
			errs <- ""
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}

// TestPieceCacheBounded: encoding more distinct pieces than the cache holds
// leaves it within its bound, and the ids are still right.
func TestPieceCacheBounded(t *testing.T) {
	tok, err := parseGPT2Files(gunzip(gpt2VocabGz), gunzip(gpt2MergesGz), "vocab", "merges")
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for i := range maxCachedPieces + 1000 {
		text.WriteByte(' ')
		for ; i > 0; i /= 26 { // i in letters: one distinct piece each
			text.WriteByte(byte('a' + i%26))
		}
	}
	checkRoundTrip(t, tok, text.String())
	if n := len(tok.cache.ids); n > maxCachedPieces {
		t.Errorf("the cache holds %d pieces, more than its bound of %d", n, maxCachedPieces)
	}
}
