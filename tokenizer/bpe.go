package tokenizer

import (
	"container/heap"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/pkg/errors"
)

// maxVocab bounds the vocabulary a file may define: the largest in use hold
// about 256 thousand tokens.
const maxVocab = 1 << 20

// bpeSpec is what a vocabulary file defines, before it is checked: tokens
// written with GPT-2's byte-to-unicode table (or SentencePiece's way), the
// merges in rank order, and added tokens whose names are their text.
type bpeSpec struct {
	vocab         map[string]int
	merges        [][2]string
	specials      map[string]int // added tokens; may repeat vocab entries
	ignoreMerges  bool           // a piece that is a whole token is that token
	sentencePiece bool           // tokens are text with "▁" for a space, and <0xNN> bytes

	vocabWhere string             // names the vocabulary in errors: its file
	mergesFile string             // names the file of the merges in errors
	mergeWhere func(i int) string // names merge i in its file: "line 7"
}

// merge is what a pair of adjacent tokens becomes, and how early it merges.
type merge struct {
	rank, id int32
}

// bpeModel is a checked BPE vocabulary. A byte-level one merges a piece's
// bytes; a SentencePiece one merges its characters, each the token of its
// own (chars) or else, byte by byte, the <0xNN> tokens (byte fallback).
type bpeModel struct {
	tokens  [][]byte         // each id's bytes
	byteIDs [256]int32       // the id of each single byte's token, -1 for none
	merges  map[uint64]merge // by pairKey(left, right)
	whole   map[string]int32 // a piece to the id of the token it spells, for ignoreMerges
	chars   map[string]int32 // SentencePiece: a one-character token's text to its id
	eos     int              // <|endoftext|>, -1 without one
}

func pairKey(left, right int32) uint64 { return uint64(left)<<32 | uint64(uint32(right)) }

// endOfText is GPT-2's end-of-text token, also its beginning of text.
const endOfText = "<|endoftext|>"

// newBPEModel checks spec: ids are exactly 0..n-1, each once; every token
// is written with the byte-to-unicode table; every merge joins two tokens
// into a third; no pair merges twice.
func newBPEModel(spec bpeSpec) (*bpeModel, error) {
	names, err := namesByID(spec)
	if err != nil {
		return nil, errors.Wrap(err, spec.vocabWhere)
	}
	m := &bpeModel{tokens: make([][]byte, len(names)), eos: -1}
	for id, name := range names {
		if sid, ok := spec.specials[name]; ok && sid == id {
			m.tokens[id] = []byte(name)
			continue
		}
		b, err := tokenBytes(name, spec.sentencePiece)
		if err != nil {
			return nil, errors.Errorf("%s: token %s (id %d) %v", spec.vocabWhere, msg.Quote(name), id, err)
		}
		m.tokens[id] = b
	}
	if id, ok := spec.vocab[endOfText]; ok {
		m.eos = id
	} else if id, ok := spec.specials[endOfText]; ok {
		m.eos = id
	}
	m.setByteIDs(spec)
	if err := m.setMerges(spec); err != nil {
		return nil, err
	}
	if spec.sentencePiece {
		m.chars = make(map[string]int32)
		for name, id := range spec.vocab {
			if utf8.RuneCountInString(name) == 1 {
				m.chars[name] = int32(id)
			}
		}
	}
	if spec.ignoreMerges {
		m.whole = wholeTokens(spec)
	}
	return m, nil
}

// tokenBytes is the bytes a vocabulary entry stands for: GPT-2's
// byte-to-unicode characters decoded, or SentencePiece's text with "▁" a
// space and <0xNN> the byte NN.
func tokenBytes(name string, sentencePiece bool) ([]byte, error) {
	if sentencePiece {
		if b, ok := fallbackByte(name); ok {
			return []byte{b}, nil
		}
		return []byte(strings.ReplaceAll(name, metaspace, " ")), nil
	}
	b, bad, ok := byteLevelDecode(name)
	if !ok {
		return nil, errors.Errorf("holds %s, which is not one of GPT-2's byte-level characters", msg.Quote(string(bad)))
	}
	return b, nil
}

// wholeTokens maps each piece a token spells to its id, for ignoreMerges:
// a byte-level piece is bytes, a SentencePiece one the vocabulary's text.
// A special token whose name is not byte-level text is never a piece.
func wholeTokens(spec bpeSpec) map[string]int32 {
	whole := make(map[string]int32, len(spec.vocab))
	for name, id := range spec.vocab {
		if spec.sentencePiece {
			whole[name] = int32(id)
		} else if b, _, ok := byteLevelDecode(name); ok {
			whole[string(b)] = int32(id)
		}
	}
	return whole
}

// namesByID lists the tokens by id, refusing ids that are not 0..n-1 or
// that two tokens share. An added token may repeat a vocabulary entry with
// its id.
func namesByID(spec bpeSpec) ([]string, error) {
	n := len(spec.vocab)
	for name, id := range spec.specials {
		vid, inVocab := spec.vocab[name]
		if inVocab && vid != id {
			return nil, errors.Errorf("added token %s has id %d, but the vocabulary gives it %d", msg.Quote(name), id, vid)
		}
		if !inVocab {
			n++
		}
	}
	if n == 0 {
		return nil, errors.New("the vocabulary is empty")
	}
	if n > maxVocab {
		return nil, errors.Errorf("%d tokens is more than the %d a vocabulary may hold", n, maxVocab)
	}
	names := make([]string, n)
	filled := make([]bool, n)
	place := func(name string, id int) error {
		if id < 0 || id >= n {
			return errors.Errorf("token %s has id %d: the %d tokens need ids 0..%d", msg.Quote(name), id, n, n-1)
		}
		if filled[id] && names[id] != name {
			pair := []string{names[id], name}
			sort.Strings(pair)
			return errors.Errorf("id %d belongs to both %s and %s", id, msg.Quote(pair[0]), msg.Quote(pair[1]))
		}
		names[id], filled[id] = name, true
		return nil
	}
	for _, tokens := range []map[string]int{spec.vocab, spec.specials} {
		for _, name := range sortedByID(tokens) {
			if err := place(name, tokens[name]); err != nil {
				return nil, err
			}
		}
	}
	return names, nil
}

// sortedByID lists tokens' names by id (then name), so that the first
// problem found, and so the message, is the same on every run.
func sortedByID(tokens map[string]int) []string {
	names := make([]string, 0, len(tokens))
	for name := range tokens {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := tokens[names[i]], tokens[names[j]]
		return a < b || a == b && names[i] < names[j]
	})
	return names
}

// setByteIDs finds each byte's own token: GPT-2's character for it, or
// SentencePiece's <0xNN>.
func (m *bpeModel) setByteIDs(spec bpeSpec) {
	for b := range 256 {
		name := string(byteRunes[b])
		if spec.sentencePiece {
			name = fallbackName(byte(b))
		}
		m.byteIDs[b] = -1
		if id, ok := spec.vocab[name]; ok {
			m.byteIDs[b] = int32(id)
		}
	}
}

// setMerges ranks the merges in file order.
func (m *bpeModel) setMerges(spec bpeSpec) error {
	m.merges = make(map[uint64]merge, len(spec.merges))
	for rank, pair := range spec.merges {
		var ids [3]int32
		for i, name := range []string{pair[0], pair[1], pair[0] + pair[1]} {
			id, ok := spec.vocab[name]
			if !ok {
				return errors.Errorf("%s: %s: merge %s %s: %s is not in the vocabulary", spec.mergesFile,
					spec.mergeWhere(rank), msg.Quote(pair[0]), msg.Quote(pair[1]), msg.Quote(name))
			}
			ids[i] = int32(id)
		}
		key := pairKey(ids[0], ids[1])
		if earlier, dup := m.merges[key]; dup {
			return errors.Errorf("%s: %s: merge %s %s repeats %s", spec.mergesFile,
				spec.mergeWhere(rank), msg.Quote(pair[0]), msg.Quote(pair[1]), spec.mergeWhere(int(earlier.rank)))
		}
		m.merges[key] = merge{rank: int32(rank), id: ids[2]}
	}
	return nil
}

// encodePiece appends the ids of one pre-tokenized piece to ids. at is the
// piece's offset in the text, for the error when a byte has no token.
func (m *bpeModel) encodePiece(ids []int, piece string, at int) ([]int, error) {
	if id, ok := m.whole[piece]; ok {
		return append(ids, int(id)), nil
	}
	symbols, err := m.firstSymbols(piece, at)
	if err != nil {
		return nil, err
	}
	for i := range symbols {
		symbols[i].prev, symbols[i].next = int32(i-1), int32(i+1)
	}
	symbols[len(symbols)-1].next = -1
	m.mergeAll(symbols)
	for i := 0; i >= 0; i = int(symbols[i].next) {
		ids = append(ids, int(symbols[i].id))
	}
	return ids, nil
}

// firstSymbols is a piece's tokens before any merge: one a byte, or for
// SentencePiece one a character, its bytes' tokens when it has none.
func (m *bpeModel) firstSymbols(piece string, at int) ([]symbol, error) {
	symbols := make([]symbol, 0, len(piece))
	for i := 0; i < len(piece); {
		size := 1
		if m.chars != nil {
			_, size = utf8.DecodeRuneInString(piece[i:])
			if id, ok := m.chars[piece[i:i+size]]; ok {
				symbols = append(symbols, symbol{id: id})
				i += size
				continue
			}
		}
		for end := i + size; i < end; i++ {
			id := m.byteIDs[piece[i]]
			if id < 0 {
				return nil, noByteToken(piece, i, at)
			}
			symbols = append(symbols, symbol{id: id})
		}
	}
	return symbols, nil
}

// symbol is one token of a piece as it merges: a doubly linked list over
// the piece's first tokens' positions, where a merged token keeps its left one.
type symbol struct {
	id         int32 // -1 once merged into the symbol on its left
	prev, next int32 // positions of the neighbours, -1 at the ends
}

// candidate is a merge that may apply at pos, valid while the symbols at
// pos and after it are still left and right.
type candidate struct {
	merge
	pos, left, right int32
}

// candidates is a min-heap by rank, then position: the lowest-ranked merge
// applies first, leftmost first, as GPT-2 and Hugging Face merge.
type candidates []candidate

func (c candidates) Len() int { return len(c) }
func (c candidates) Less(i, j int) bool {
	return c[i].rank < c[j].rank || c[i].rank == c[j].rank && c[i].pos < c[j].pos
}
func (c candidates) Swap(i, j int) { c[i], c[j] = c[j], c[i] }
func (c *candidates) Push(x any)   { *c = append(*c, x.(candidate)) }
func (c *candidates) Pop() any {
	old := *c
	last := old[len(old)-1]
	*c = old[:len(old)-1]
	return last
}

// mergeAll applies merges to symbols until none applies. A heap of
// candidate merges makes a piece of n bytes cost O(n log n), so a long run
// of one character is not quadratic.
func (m *bpeModel) mergeAll(symbols []symbol) {
	var queue candidates
	push := func(pos int32) {
		if pos < 0 || symbols[pos].next < 0 {
			return
		}
		left, right := symbols[pos].id, symbols[symbols[pos].next].id
		if mg, ok := m.merges[pairKey(left, right)]; ok {
			heap.Push(&queue, candidate{merge: mg, pos: pos, left: left, right: right})
		}
	}
	for pos := range symbols {
		push(int32(pos))
	}
	for queue.Len() > 0 {
		c := heap.Pop(&queue).(candidate)
		next := symbols[c.pos].next
		if symbols[c.pos].id != c.left || next < 0 || symbols[next].id != c.right {
			continue // an earlier merge took one of its symbols
		}
		symbols[c.pos].id = c.id
		symbols[next].id = -1
		after := symbols[next].next
		symbols[c.pos].next = after
		if after >= 0 {
			symbols[after].prev = c.pos
		}
		push(symbols[c.pos].prev)
		push(c.pos)
	}
}
