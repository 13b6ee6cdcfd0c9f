package tokenizer

import (
	"encoding/json"

	"github.com/pkg/errors"
)

// stages is what a tokenizer.json's normalizer, pre-tokenizer, decoder and
// post-processor make of text, as this package builds them.
type stages struct {
	kind        string // names the tokenizer: "Llama 3's byte-level BPE"
	gpt2        bool   // GPT-2's: added tokens' names are text
	normalize   func(s string) string
	pretokenize preTokenizer
	decoding    tokenDecoding
	template    template // the special tokens the post-processor puts around the text
}

// component is any normalizer, pre-tokenizer, decoder or post-processor of
// a tokenizer.json: its type and whichever options that type has.
type component struct {
	Type          string            `json:"type"`
	Normalizers   []json.RawMessage `json:"normalizers"`
	PreTokenizers []json.RawMessage `json:"pretokenizers"`
	Decoders      []json.RawMessage `json:"decoders"`
	Processors    []json.RawMessage `json:"processors"`
	Prepend       *string           `json:"prepend"`
	Pattern       struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	} `json:"pattern"`
	Content          *string `json:"content"`
	Behavior         string  `json:"behavior"`
	Invert           bool    `json:"invert"`
	Replacement      string  `json:"replacement"`
	PrependScheme    *string `json:"prepend_scheme"`
	AddPrefixSpace   *bool   `json:"add_prefix_space"`
	Split            *bool   `json:"split"`
	UseRegex         *bool   `json:"use_regex"`
	IndividualDigits bool    `json:"individual_digits"`
	Start            int     `json:"start"`
	Stop             int     `json:"stop"`
	Single           []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	} `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
}

// readComponent reads one stage; a missing one is a component of no type.
func readComponent(key string, raw json.RawMessage) (component, error) {
	var c component
	if isNull(raw) {
		return c, nil
	}
	if json.Unmarshal(raw, &c) != nil || c.Type == "" {
		return c, errors.Errorf("%s is %s: want an object with a type", key, componentType(raw))
	}
	return c, nil
}

// readStages builds a tokenizer.json's stages, each from its parts. The
// model is a byte-level BPE when the pre-tokenizer ends in ByteLevel, and
// else must fall back to bytes (SentencePiece's way: the vocabulary is
// text, "▁" a space).
func readStages(file tokenizerJSON) (stages, error) {
	var s stages
	norm, err := readComponent("normalizer", file.Normalizer)
	if err != nil {
		return s, err
	}
	if s.normalize, err = readNormalizer("normalizer", norm); err != nil {
		return s, err
	}
	pre, err := readComponent("pre_tokenizer", file.PreTokenizer)
	if err != nil {
		return s, err
	}
	pretokenize, name, byteLevel, err := readPreTokenizer("pre_tokenizer", pre)
	if err != nil {
		return s, err
	}
	s.pretokenize = pretokenize
	if s.decoding, err = readDecoder("decoder", file.Decoder); err != nil {
		return s, err
	}
	if err := checkModelKind(file.Model, byteLevel, s.decoding); err != nil {
		return s, err
	}
	s.decoding.byteLevel = byteLevel
	s.kind = "SentencePiece BPE"
	if byteLevel {
		s.kind = "byte-level BPE"
		if name != "" {
			s.kind = name + " byte-level BPE"
		}
	}
	if s.gpt2 = isGPT2(file, pre); s.gpt2 {
		s.kind = "GPT-2 byte-level BPE"
		return s, nil
	}
	s.template, err = readPostProcessor("post_processor", file.PostProcessor)
	return s, err
}

// isGPT2 says the file is GPT-2's: ByteLevel alone, GPT-2's split without
// a space put first, no normalizer, and only special added tokens, whose
// names in text are text, as GPT-2's own encoder has them.
func isGPT2(file tokenizerJSON, pre component) bool {
	if pre.Type != "ByteLevel" || pre.UseRegex != nil && !*pre.UseRegex || pre.AddPrefixSpace != nil && *pre.AddPrefixSpace ||
		!isNull(file.Normalizer) {
		return false
	}
	for _, t := range file.AddedTokens {
		if !t.Special {
			return false
		}
	}
	return true
}

// checkModelKind refuses a model that neither a ByteLevel pre-tokenizer
// nor byte fallback lets encode any text, one that has both, and a
// decoder that does not undo what the model's kind writes.
func checkModelKind(m *bpeJSON, byteLevel bool, d tokenDecoding) error {
	switch {
	case byteLevel && m.ByteFallback:
		return errors.New("model.byte_fallback is true with a ByteLevel pre-tokenizer: built is one of the two")
	case !byteLevel && !m.ByteFallback:
		return errors.New("model.byte_fallback is false and the pre-tokenizer has no ByteLevel: built are a byte-level BPE and a BPE with byte_fallback")
	case byteLevel && (d.spaceMark != "" || d.byteFallback || d.stripSpaces != 0):
		return errors.New("decoder is not ByteLevel: built for a byte-level BPE is ByteLevel (or none)")
	case !byteLevel && d.byteLevel:
		return errors.New("decoder is ByteLevel, but the pre-tokenizer has none: built for a BPE with byte_fallback is Replace, ByteFallback, Fuse, Strip or Metaspace")
	}
	return nil
}
