package tokenizer

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/pkg/errors"
)

// byteBPE is a byte-level BPE tokenizer: a pre-tokenizer cuts text into
// pieces, and each piece's UTF-8 bytes merge into tokens. The pre-tokenizer
// is a field so that a vocabulary with another split (Llama 3's pattern)
// can reuse the rest.
type byteBPE struct {
	model    *bpeModel
	pieceLen func(s string) int // the pre-tokenizer: the first piece's length
	name     string
	cache    pieceCache
}

// newGPT2BPE is a byte-level BPE with GPT-2's pre-tokenizer.
func newGPT2BPE(spec bpeSpec) (*byteBPE, error) {
	model, err := newBPEModel(spec)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("GPT-2 byte-level BPE (%d tokens)", len(model.tokens))
	return &byteBPE{model: model, pieceLen: gpt2PieceLen, name: name}, nil
}

// Encode splits text into pieces and each piece into tokens.
func (t *byteBPE) Encode(text string) ([]int, error) {
	ids := make([]int, 0, len(text)/3+1)
	for at := 0; at < len(text); {
		piece := text[at : at+t.pieceLen(text[at:])]
		pieceIDs, err := t.encodePiece(piece, at)
		if err != nil {
			return nil, err
		}
		ids = append(ids, pieceIDs...)
		at += len(piece)
	}
	return ids, nil
}

// encodePiece returns a piece's ids, from the cache when the piece was seen
// before: text repeats its words, and merging is the costly part.
func (t *byteBPE) encodePiece(piece string, at int) ([]int, error) {
	if ids, ok := t.cache.get(piece); ok {
		return ids, nil
	}
	ids, err := t.model.encodePiece(nil, piece, at)
	if err != nil {
		return nil, err
	}
	t.cache.put(piece, ids)
	return ids, nil
}

// Token is a copy of id's bytes (the tokenizer stays immutable), nil for an
// id outside [0, Size()).
func (t *byteBPE) Token(id int) []byte {
	if id < 0 || id >= len(t.model.tokens) {
		return nil
	}
	return bytes.Clone(t.model.tokens[id])
}

func (t *byteBPE) Size() int    { return len(t.model.tokens) }
func (t *byteBPE) EOS() int     { return t.model.eos }
func (t *byteBPE) BOS() int     { return t.model.eos } // GPT-2 begins texts with <|endoftext|> too
func (t *byteBPE) Name() string { return t.name }

// maxCachedPieces bounds the cache: past it the cache starts over, so a
// long-running sampler's memory does not grow with every new word.
const maxCachedPieces = 1 << 16

// pieceCache maps pieces to their ids; safe for concurrent use.
type pieceCache struct {
	mu  sync.Mutex
	ids map[string][]int
}

// get returns the cached ids of piece; the caller must not change them.
func (c *pieceCache) get(piece string) ([]int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids, ok := c.ids[piece]
	return ids, ok
}

func (c *pieceCache) put(piece string, ids []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil || len(c.ids) >= maxCachedPieces {
		c.ids = make(map[string][]int)
	}
	// A piece is a slice of the caller's text: a copy keeps the text free.
	c.ids[strings.Clone(piece)] = ids
}

// noByteToken is the error for a piece whose byte i has no token of its
// own, naming the character that holds it and where it is in the text.
func noByteToken(piece string, i, at int) error {
	start, size := 0, 0
	for {
		_, size = utf8.DecodeRuneInString(piece[start:])
		if start+size > i {
			break
		}
		start += size
	}
	return errors.Errorf("character %s at byte %d has no token: the vocabulary lacks its byte 0x%02x",
		msg.Quote(piece[start:start+size]), at+start, piece[i])
}
