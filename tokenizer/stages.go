package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/pkg/errors"
	"golang.org/x/text/unicode/norm"
)

// stages is what a tokenizer.json's normalizer, pre-tokenizer, decoder and
// post-processor make of text, as this package builds them.
type stages struct {
	kind          string // names the tokenizer: "Llama 3's byte-level BPE"
	gpt2          bool   // GPT-2's: added tokens' names are text
	sentencePiece bool
	normalize     func(s string) string
	rewrite       func(s string, start bool) string
	pieceLen      func(s string) int
	stripSpaces   int    // leading spaces the decoder drops
	bosFirst      string // the token the post-processor puts first, "" for none
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
	Content        *string `json:"content"`
	Behavior       string  `json:"behavior"`
	Invert         bool    `json:"invert"`
	Replacement    string  `json:"replacement"`
	PrependScheme  *string `json:"prepend_scheme"`
	AddPrefixSpace *bool   `json:"add_prefix_space"`
	Split          *bool   `json:"split"`
	UseRegex       *bool   `json:"use_regex"`
	Start          int     `json:"start"`
	Stop           int     `json:"stop"`
	Single         []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	} `json:"single"`
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

// readStages decides what kind of BPE the file holds: SentencePiece's when the
// model falls back to bytes, else byte-level.
func readStages(file tokenizerJSON) (stages, error) {
	var s stages
	var err error
	if file.Model.ByteFallback {
		s, err = sentencePieceStages(file)
	} else {
		s, err = byteLevelStages(file)
	}
	if err != nil || s.gpt2 {
		return s, err
	}
	s.bosFirst, err = readPostProcessor("post_processor", file.PostProcessor)
	return s, err
}

// byteLevelStages reads GPT-2's stages, or Llama 3's and Qwen 2's: a
// Split by their pattern, then ByteLevel.
func byteLevelStages(file tokenizerJSON) (stages, error) {
	pre, err := readComponent("pre_tokenizer", file.PreTokenizer)
	if err != nil {
		return stages{}, err
	}
	var s stages
	switch {
	case pre.Type == "ByteLevel":
		if !isNull(file.Normalizer) {
			return s, errors.Errorf("normalizer is %s: a byte-level BPE as GPT-2's has none", componentType(file.Normalizer))
		}
		s = stages{kind: "GPT-2 byte-level BPE", gpt2: true, pieceLen: gpt2PieceLen}
		err = checkByteLevel("pre_tokenizer", file.PreTokenizer, true)
	case pre.Type == "Sequence" && len(pre.PreTokenizers) == 2:
		s, err = splitStages(pre)
	default:
		return s, errors.Errorf("pre_tokenizer is %s: built are ByteLevel (GPT-2's), a Sequence [Split, ByteLevel] "+
			"(Llama 3's and Qwen 2's) and, for a model with byte_fallback, none or Metaspace", componentType(file.PreTokenizer))
	}
	if err != nil {
		return s, err
	}
	if !s.gpt2 {
		if s.normalize, err = byteLevelNormalizer(file.Normalizer); err != nil {
			return s, err
		}
	}
	return s, checkByteLevel("decoder", file.Decoder, false)
}

// splitStages reads a Sequence of a Split by a pattern built and a
// ByteLevel that splits no further.
func splitStages(pre component) (stages, error) {
	split, err := readComponent("pre_tokenizer.pretokenizers[0]", pre.PreTokenizers[0])
	if err != nil {
		return stages{}, err
	}
	byteLevel, err := readComponent("pre_tokenizer.pretokenizers[1]", pre.PreTokenizers[1])
	if err != nil {
		return stages{}, err
	}
	if split.Type != "Split" || byteLevel.Type != "ByteLevel" {
		return stages{}, errors.Errorf("pre_tokenizer is Sequence [%s, %s]: built is a Sequence [Split, ByteLevel]",
			msg.Clean(split.Type), msg.Clean(byteLevel.Type))
	}
	if split.Pattern.Regex == nil {
		return stages{}, errors.New("pre_tokenizer.pretokenizers[0].pattern has no Regex: built are Llama 3's and Qwen 2's patterns")
	}
	pattern, ok := splitPatterns[*split.Pattern.Regex]
	switch {
	case !ok:
		return stages{}, errors.Errorf("pre_tokenizer.pretokenizers[0].pattern.Regex is %s: built are Llama 3's and Qwen 2's patterns, exactly",
			msg.Quote(*split.Pattern.Regex))
	case split.Behavior != "Isolated" || split.Invert:
		return stages{}, errors.Errorf("pre_tokenizer.pretokenizers[0] has behavior %s, invert %t: built is Isolated, invert false",
			msg.Quote(split.Behavior), split.Invert)
	case byteLevel.UseRegex == nil || *byteLevel.UseRegex:
		return stages{}, errors.New("pre_tokenizer.pretokenizers[1].use_regex is not false: after a Split, built is a ByteLevel that splits no further")
	case byteLevel.AddPrefixSpace != nil && *byteLevel.AddPrefixSpace:
		return stages{}, errors.New("pre_tokenizer.pretokenizers[1].add_prefix_space is true: built is a ByteLevel that adds no space")
	}
	return stages{kind: pattern.name + " byte-level BPE", pieceLen: pattern.pieceLen}, nil
}

// byteLevelNormalizer reads a byte-level BPE's normalizer: none, or NFC
// (Qwen 2's).
func byteLevelNormalizer(raw json.RawMessage) (func(string) string, error) {
	c, err := readComponent("normalizer", raw)
	switch {
	case err != nil:
		return nil, err
	case c.Type == "":
		return nil, nil
	case c.Type == "NFC":
		return norm.NFC.String, nil
	}
	return nil, errors.Errorf("normalizer is %s: built for a byte-level BPE are none and NFC", componentType(raw))
}

// sentencePieceStages reads Llama 2's stages (the normalizer Sequence
// [Prepend "▁", Replace " " "▁"] and no pre-tokenizer) or those of files
// that write the same with a Metaspace pre-tokenizer, and the decoder that
// undoes them.
func sentencePieceStages(file tokenizerJSON) (stages, error) {
	s := stages{kind: "SentencePiece BPE", sentencePiece: true}
	var err error
	switch {
	case !isNull(file.Normalizer):
		if err = checkPrependAndReplace(file.Normalizer); err != nil {
			return s, err
		}
		if !isNull(file.PreTokenizer) {
			return s, errors.Errorf("pre_tokenizer is %s: after Llama 2's normalizer, built is none", componentType(file.PreTokenizer))
		}
		s.normalize, s.pieceLen = prependAndReplace, wholePiece
	default:
		if s.rewrite, s.pieceLen, err = readMetaspace(file.PreTokenizer); err != nil {
			return s, err
		}
	}
	s.stripSpaces, err = readSentencePieceDecoder(file.Decoder)
	return s, err
}

// checkPrependAndReplace refuses a normalizer other than Llama 2's.
func checkPrependAndReplace(raw json.RawMessage) error {
	refuse := errors.Errorf(`normalizer is %s: built for a model with byte_fallback is Sequence [Prepend "▁", Replace " " with "▁"]`,
		componentType(raw))
	c, err := readComponent("normalizer", raw)
	if err != nil || c.Type != "Sequence" || len(c.Normalizers) != 2 {
		return refuse
	}
	prepend, err1 := readComponent("normalizer.normalizers[0]", c.Normalizers[0])
	replace, err2 := readComponent("normalizer.normalizers[1]", c.Normalizers[1])
	if err1 != nil || err2 != nil || prepend.Type != "Prepend" || replace.Type != "Replace" ||
		!is(prepend.Prepend, metaspace) || !is(replace.Pattern.String, " ") || !is(replace.Content, metaspace) {
		return refuse
	}
	return nil
}

func is(p *string, want string) bool { return p != nil && *p == want }

// readMetaspace reads a Metaspace pre-tokenizer with "▁" for a space.
func readMetaspace(raw json.RawMessage) (func(string, bool) string, func(string) int, error) {
	c, err := readComponent("pre_tokenizer", raw)
	if err != nil {
		return nil, nil, err
	}
	if c.Type != "Metaspace" || c.Replacement != metaspace {
		return nil, nil, errors.Errorf(`pre_tokenizer is %s: built for a model with byte_fallback is Metaspace with "▁" `+
			`(or none, after Llama 2's normalizer)`, componentType(raw))
	}
	scheme := prependAlways
	if c.PrependScheme != nil {
		scheme = prependScheme(*c.PrependScheme)
	}
	if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
		scheme = prependNever
	}
	if scheme != prependAlways && scheme != prependFirst && scheme != prependNever {
		return nil, nil, errors.Errorf("pre_tokenizer.prepend_scheme is %s: want always, first or never", msg.Quote(string(scheme)))
	}
	pieceLen := metaspacePieceLen
	if c.Split != nil && !*c.Split {
		pieceLen = wholePiece
	}
	return metaspaceRewrite(scheme), pieceLen, nil
}

// readSentencePieceDecoder reads Llama 2's decoder, Sequence [Replace "▁"
// with " ", ByteFallback, Fuse, Strip], and returns how many leading
// spaces its Strip drops. Token gives each token's bytes as the first
// three do; Decode drops the spaces.
func readSentencePieceDecoder(raw json.RawMessage) (int, error) {
	const built = `built for a model with byte_fallback is Sequence [Replace "▁" with " ", ByteFallback, Fuse, Strip " " from the start]`
	if isNull(raw) {
		return 0, errors.New("decoder is missing: " + built)
	}
	refuse := errors.Errorf("decoder is %s: %s", componentType(raw), built)
	c, err := readComponent("decoder", raw)
	if err != nil || c.Type != "Sequence" || len(c.Decoders) < 3 || len(c.Decoders) > 4 {
		return 0, refuse
	}
	var parts [4]component
	for i, d := range c.Decoders {
		if parts[i], err = readComponent(fmt.Sprintf("decoder.decoders[%d]", i), d); err != nil {
			return 0, err
		}
	}
	replace, strip := parts[0], parts[3]
	if replace.Type != "Replace" || !is(replace.Pattern.String, metaspace) || !is(replace.Content, " ") ||
		parts[1].Type != "ByteFallback" || parts[2].Type != "Fuse" {
		return 0, refuse
	}
	if len(c.Decoders) == 3 {
		return 0, nil
	}
	if strip.Type != "Strip" || !is(strip.Content, " ") || strip.Stop != 0 || strip.Start < 0 {
		return 0, refuse
	}
	return strip.Start, nil
}

// readPostProcessor reads which token a post-processor puts before the
// text: none for ByteLevel (which only moves offsets), the first of a
// TemplateProcessing "<s> $A"; a Sequence holds either.
func readPostProcessor(key string, raw json.RawMessage) (string, error) {
	c, err := readComponent(key, raw)
	if err != nil {
		return "", err
	}
	switch c.Type {
	case "", "ByteLevel":
		return "", nil
	case "TemplateProcessing":
		return readTemplate(key, c)
	case "Sequence":
		first := ""
		for i, p := range c.Processors {
			bos, err := readPostProcessor(fmt.Sprintf("%s.processors[%d]", key, i), p)
			if err != nil {
				return "", err
			}
			if bos != "" {
				first = bos
			}
		}
		return first, nil
	}
	return "", errors.Errorf("%s is %s: built are ByteLevel and TemplateProcessing (\"$A\" or \"<s> $A\")", key, componentType(raw))
}

// readTemplate reads a TemplateProcessing's single-sequence template.
func readTemplate(key string, c component) (string, error) {
	var parts []string
	for _, p := range c.Single {
		switch {
		case p.SpecialToken != nil:
			parts = append(parts, p.SpecialToken.ID)
		case p.Sequence != nil:
			parts = append(parts, "$"+p.Sequence.ID)
		default:
			parts = append(parts, "?")
		}
	}
	switch {
	case len(parts) == 1 && parts[0] == "$A":
		return "", nil
	case len(parts) == 2 && c.Single[0].SpecialToken != nil && parts[1] == "$A":
		return parts[0], nil
	}
	return "", errors.Errorf("%s.single is %s: built are \"$A\" and a special token then \"$A\"", key, msg.Quote(strings.Join(parts, " ")))
}
