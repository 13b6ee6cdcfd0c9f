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

// bpeTokenizer is a BPE tokenizer, in Hugging Face's stages. Text is cut
// at its added tokens; each stretch between them is normalized and cut
// again at the added tokens matched in normalized text; each split is
// rewritten (Metaspace), cut into pieces by the pre-tokenizer, and each
// piece merges into tokens. GPT-2's is the zero of every stage but the
// pre-tokenizer: it matches no added token.
type bpeTokenizer struct {
	model                  *bpeModel
	added, addedNormalized addedTokens
	normalize              func(s string) string // nil leaves text as it is
	pretokenize            preTokenizer
	// stripSpaces is how many leading spaces Decode drops (SentencePiece's
	// decoder takes back the space its normalizer put first).
	stripSpaces int
	bos, eos    int
	template    template // Encode puts these ids around the text, as the file's post-processor does
	name        string
	cache       pieceCache
}

// newGPT2BPE is a byte-level BPE with GPT-2's pre-tokenizer.
func newGPT2BPE(spec bpeSpec) (*bpeTokenizer, error) {
	model, err := newBPEModel(spec)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("GPT-2 byte-level BPE (%d tokens)", len(model.tokens))
	// GPT-2 begins texts with <|endoftext|> too.
	return &bpeTokenizer{model: model, pretokenize: byPieceLen(gpt2PieceLen), bos: model.eos, eos: model.eos, name: name}, nil
}

// Encode is the ids of text, with the ids the post-processor puts around
// it.
func (t *bpeTokenizer) Encode(text string) ([]int, error) {
	ids := make([]int, 0, len(text)/3+len(t.template.before)+len(t.template.after))
	ids, err := t.encodeText(append(ids, t.template.before...), text)
	if err != nil {
		return nil, err
	}
	return append(ids, t.template.after...), nil
}

// encodeText appends the ids of text to ids: it cuts text at its added
// tokens and encodes the stretches between.
func (t *bpeTokenizer) encodeText(ids []int, text string) ([]int, error) {
	err := t.added.split(text, func(stretch string, at int) error {
		var err error
		ids, err = t.encodeStretch(ids, stretch, at)
		return err
	}, func(id int) error {
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// encodeStretch appends the ids of text that holds no added token matched
// before normalizing, which starts at byte at of the whole.
func (t *bpeTokenizer) encodeStretch(ids []int, text string, at int) ([]int, error) {
	if t.normalize != nil {
		text = t.normalize(text)
	}
	err := t.addedNormalized.split(text, func(stretch string, pos int) error {
		var err error
		ids, err = t.encodeSplit(ids, stretch, at+pos)
		return err
	}, func(id int) error {
		ids = append(ids, id)
		return nil
	})
	return ids, err
}

// encodeSplit appends the ids of normalized text without added tokens,
// which starts at byte at (of the text, or where it is after normalizing).
func (t *bpeTokenizer) encodeSplit(ids []int, text string, at int) ([]int, error) {
	if text == "" {
		return ids, nil // Hugging Face drops an empty split before the pre-tokenizer
	}
	err := t.pretokenize(text, at, func(piece string, pieceAt int) error {
		pieceIDs, err := t.encodePiece(piece, pieceAt)
		ids = append(ids, pieceIDs...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// encodePiece returns a piece's ids, from the cache when the piece was seen
// before: text repeats its words, and merging is the costly part. A long
// piece (a SentencePiece text is one) is not kept: it will not come again.
func (t *bpeTokenizer) encodePiece(piece string, at int) ([]int, error) {
	if ids, ok := t.cache.get(piece); ok {
		return ids, nil
	}
	ids, err := t.model.encodePiece(nil, piece, at)
	if err != nil {
		return nil, err
	}
	if len(piece) <= maxCachedPieceLen {
		t.cache.put(piece, ids)
	}
	return ids, nil
}

// decode is the bytes of ids, less the leading spaces the decoder drops.
func (t *bpeTokenizer) decode(ids []int) []byte {
	out := joinTokens(t, ids)
	for range t.stripSpaces {
		if len(out) == 0 || out[0] != ' ' {
			break
		}
		out = out[1:]
	}
	return out
}

// Token is a copy of id's bytes (the tokenizer stays immutable), nil for an
// id outside [0, Size()).
func (t *bpeTokenizer) Token(id int) []byte {
	if id < 0 || id >= len(t.model.tokens) {
		return nil
	}
	return bytes.Clone(t.model.tokens[id])
}

func (t *bpeTokenizer) Size() int    { return len(t.model.tokens) }
func (t *bpeTokenizer) EOS() int     { return t.eos }
func (t *bpeTokenizer) BOS() int     { return t.bos }
func (t *bpeTokenizer) Name() string { return t.name }

// maxCachedPieces bounds the cache: past it the cache starts over, so a
// long-running sampler's memory does not grow with every new word.
const maxCachedPieces = 1 << 16

// maxCachedPieceLen is the longest piece cached, in bytes.
const maxCachedPieceLen = 256

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
