package tokenizer

import (
	"encoding/json"
	"fmt"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/pkg/errors"
)

// tokenDecoding is what a tokenizer.json's decoder makes of the tokens,
// as this package keeps it: each token's bytes (Token), and the leading
// spaces Decode drops from a whole text.
type tokenDecoding struct {
	byteLevel    bool   // ByteLevel: a token is GPT-2's characters for bytes
	spaceMark    string // Replace of "▁" by " " (or Metaspace): the mark a token writes a space with, "" for none
	byteFallback bool   // ByteFallback: <0xNN> is the byte NN
	stripSpaces  int    // Strip " " from the start of the text, or Metaspace's first space
}

// readDecoder reads a decoder, the value of key: ByteLevel, or for a
// model that is not byte-level a Sequence of Replace "▁" with " ",
// ByteFallback, Fuse and Strip " " from the start (Llama 2's), or
// Metaspace. Each token's bytes are what the steps make of it alone: Fuse
// only joins them, so a Strip after it acts on the whole text.
func readDecoder(key string, raw json.RawMessage) (tokenDecoding, error) {
	var d tokenDecoding
	c, err := readComponent(key, raw)
	if err != nil {
		return d, err
	}
	parts := []json.RawMessage{raw}
	if c.Type == "Sequence" {
		parts = c.Decoders
	} else if c.Type == "" {
		parts = nil
	}
	fused := false
	for i, partRaw := range parts {
		partKey := key
		if c.Type == "Sequence" {
			partKey = fmt.Sprintf("%s.decoders[%d]", key, i)
		}
		part, err := readComponent(partKey, partRaw)
		if err != nil {
			return d, err
		}
		if err := d.add(partKey, part, fused); err != nil {
			return d, err
		}
		fused = fused || part.Type == "Fuse"
	}
	return d, nil
}

// add takes one decoder step in; fused says a Fuse came before it.
func (d *tokenDecoding) add(key string, c component, fused bool) error {
	switch c.Type {
	case "ByteLevel":
		d.byteLevel = true
	case "Replace":
		if !is(c.Pattern.String, metaspace) || !is(c.Content, " ") {
			return errors.Errorf(`%s is a Replace other than of "▁" with " ": built is that one`, key)
		}
		d.spaceMark = metaspace
	case "Metaspace":
		if c.Replacement != metaspace {
			return errors.Errorf("%s.replacement is %s: built is %s", key, msg.Quote(c.Replacement), msg.Quote(metaspace))
		}
		scheme, err := readPrependScheme(key, c)
		if err != nil {
			return err
		}
		d.spaceMark = metaspace
		if scheme != prependNever {
			d.stripSpaces = 1
		}
	case "ByteFallback":
		d.byteFallback = true
	case "Fuse":
	case "Strip":
		if !fused || !is(c.Content, " ") || c.Stop != 0 || c.Start < 0 {
			return errors.Errorf(`%s is a Strip other than of " " from the start of the text (after a Fuse): built is that one`, key)
		}
		d.stripSpaces = c.Start
	default:
		return errors.Errorf("%s.type is %s: built are ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace and a Sequence of them",
			key, msg.Quote(c.Type))
	}
	return nil
}

func is(p *string, want string) bool { return p != nil && *p == want }
