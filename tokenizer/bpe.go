package tokenizer

import (
	"container/heap"
	"slices"
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
	mergeIDs      [][3]int32     // instead of merges when read as ids: left, right, and what they make
	specials      map[string]int // added tokens; may repeat vocab entries
	ignoreMerges  bool           // a piece that is a whole token is that token
	sentencePiece bool           // tokens are text, not GPT-2's characters; characters without a token are <0xNN> bytes
	holes         bool           // ids may skip numbers (tokenizer.json), not only 0..n-1
	spaceMark     string         // SentencePiece: what a token writes a space as ("▁"), "" to keep it as it is
	fallbackBytes bool           // SentencePiece: a token <0xNN> is the byte NN

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
	// The merge table is built beside the tokens' bytes: each takes a
	// good part of loading a large vocabulary, and neither reads what the
	// other writes.
	merged := make(chan error, 1)
	go func() { merged <- m.setMerges(spec, names) }()
	err = m.setTokens(spec, names)
	if mergeErr := <-merged; err == nil {
		err = mergeErr
	}
	if err != nil {
		return nil, err
	}
	if id, ok := spec.vocab[endOfText]; ok {
		m.eos = id
	} else if id, ok := spec.specials[endOfText]; ok {
		m.eos = id
	}
	m.setByteIDs(spec)
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

// setTokens sets each id's bytes from its name (names, by id): an added
// token's as the decoder gives added tokens, the others' as vocabulary
// entries. The vocabulary's share one array: a token's bytes are never
// longer than its name.
func (m *bpeModel) setTokens(spec bpeSpec, names []string) error {
	size := 0
	for _, name := range names {
		size += len(name)
	}
	arena := make([]byte, 0, size)
	for id, name := range names {
		if name == "" {
			continue // an id no token has: Token gives nil, as for one out of range
		}
		start := len(arena)
		grown, err := spec.appendTokenBytes(arena, name)
		if err != nil {
			if sid, ok := spec.specials[name]; ok && sid == id {
				continue // an added token's name need not be a vocabulary entry's: set below
			}
			return errors.Errorf("%s: token %s (id %d) %v", spec.vocabWhere, msg.Quote(name), id, err)
		}
		arena = grown
		m.tokens[id] = arena[start:len(arena):len(arena)]
	}
	for name, id := range spec.specials {
		m.tokens[id] = spec.addedBytes(name)
	}
	return nil
}

// tokenBytes is the bytes a vocabulary entry stands for, as the decoder
// gives them: GPT-2's byte-to-unicode characters decoded, or
// SentencePiece's text with "▁" a space and <0xNN> the byte NN.
func (spec bpeSpec) tokenBytes(name string) ([]byte, error) {
	return spec.appendTokenBytes(nil, name)
}

// appendTokenBytes is tokenBytes appending to dst.
func (spec bpeSpec) appendTokenBytes(dst []byte, name string) ([]byte, error) {
	if spec.sentencePiece {
		if b, ok := fallbackByte(name); ok && spec.fallbackBytes {
			return append(dst, b), nil
		}
		if spec.spaceMark == "" || !strings.Contains(name, spec.spaceMark) {
			return append(dst, name...), nil
		}
		return append(dst, strings.ReplaceAll(name, spec.spaceMark, " ")...), nil
	}
	b, bad, ok := appendByteLevel(dst, name)
	if !ok {
		return nil, errors.Errorf("holds %s, which is not one of GPT-2's byte-level characters", msg.Quote(string(bad)))
	}
	return b, nil
}

// addedBytes is the bytes of an added token, as the decoder gives them:
// its name, through GPT-2's table when every character of it is in the
// table (Hugging Face's ByteLevel decoder), or as a SentencePiece token's
// text.
func (spec bpeSpec) addedBytes(name string) []byte {
	if !spec.sentencePiece {
		if b, _, ok := byteLevelDecode(name); ok {
			return b
		}
		return []byte(name)
	}
	b, _ := spec.tokenBytes(name) // text never fails
	return b
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

// namesByID lists the tokens by id ("" for an id no token has), refusing
// an id out of range or that two tokens share. The ids are 0..n-1 for n
// tokens, or, with spec.holes, 0..the largest, as Hugging Face allows
// (cl100k's files leave ids between the vocabulary and the added tokens
// unused). An added token may repeat a vocabulary entry with its id. The
// tokens are placed as the maps give them; a problem is then named by the
// smallest id that has one, so the message is the same on every run.
func namesByID(spec bpeSpec) ([]string, error) {
	n, largest := len(spec.vocab), -1
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
	bound := n
	if spec.holes {
		bound = maxVocab
	}
	if name, id, bad := smallestOutside(spec, bound); bad {
		if spec.holes {
			return nil, errors.Errorf("token %s has id %d: ids are 0..%d", msg.Quote(name), id, bound-1)
		}
		return nil, errors.Errorf("token %s has id %d: the %d tokens need ids 0..%d", msg.Quote(name), id, n, n-1)
	}
	for _, tokens := range []map[string]int{spec.vocab, spec.specials} {
		for _, id := range tokens {
			largest = max(largest, id)
		}
	}
	names := make([]string, largest+1)
	filled := make([]bool, largest+1)
	shared := -1 // the smallest id two tokens share
	for _, tokens := range []map[string]int{spec.vocab, spec.specials} {
		for name, id := range tokens {
			if filled[id] && names[id] != name && (shared < 0 || id < shared) {
				shared = id
			}
			names[id], filled[id] = name, true
		}
	}
	if shared >= 0 {
		pair := tokensWithID(spec, shared)
		return nil, errors.Errorf("id %d belongs to both %s and %s", shared, msg.Quote(pair[0]), msg.Quote(pair[1]))
	}
	return names, nil
}

// smallestOutside is the token with the smallest id (then name) outside
// 0..bound-1, if one is.
func smallestOutside(spec bpeSpec, bound int) (name string, id int, found bool) {
	for _, tokens := range []map[string]int{spec.vocab, spec.specials} {
		for n, i := range tokens {
			if (i < 0 || i >= bound) && (!found || i < id || i == id && n < name) {
				name, id, found = n, i, true
			}
		}
	}
	return name, id, found
}

// tokensWithID lists the names of the tokens with id, sorted.
func tokensWithID(spec bpeSpec, id int) []string {
	var names []string
	for _, tokens := range []map[string]int{spec.vocab, spec.specials} {
		for name, i := range tokens {
			if i == id && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
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

// setMerges ranks the merges in file order; names are the tokens by id,
// for a message.
func (m *bpeModel) setMerges(spec bpeSpec, names []string) error {
	n := max(len(spec.merges), len(spec.mergeIDs))
	m.merges = make(map[uint64]merge, n)
	var joined []byte
	for rank := range n {
		var ids [3]int32
		if spec.mergeIDs != nil {
			ids = spec.mergeIDs[rank]
		} else {
			pair := spec.merges[rank]
			joined = append(append(joined[:0], pair[0]...), pair[1]...)
			for i, name := range [][]byte{[]byte(pair[0]), []byte(pair[1]), joined} {
				id, ok := spec.vocab[string(name)]
				if !ok {
					return errors.Errorf("%s: %s: merge %s %s: %s is not in the vocabulary", spec.mergesFile,
						spec.mergeWhere(rank), msg.Quote(pair[0]), msg.Quote(pair[1]), msg.Quote(string(name)))
				}
				ids[i] = int32(id)
			}
		}
		key := pairKey(ids[0], ids[1])
		if earlier, dup := m.merges[key]; dup {
			return errors.Errorf("%s: %s: merge %s %s repeats %s", spec.mergesFile,
				spec.mergeWhere(rank), msg.Quote(names[ids[0]]), msg.Quote(names[ids[1]]), spec.mergeWhere(int(earlier.rank)))
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
