package tokenizer

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/pkg/errors"
)

// tokenizerJSON is the part of a Hugging Face tokenizer.json that decides
// how text becomes ids. post_processor (which adds special tokens around a
// sequence) is left out: callers add BOS and EOS themselves.
type tokenizerJSON struct {
	Model        *bpeJSON        `json:"model"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	AddedTokens  []addedToken    `json:"added_tokens"`
}

type bpeJSON struct {
	Type                    string            `json:"type"`
	Vocab                   json.RawMessage   `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`
	Dropout                 *float64          `json:"dropout"`
	ContinuingSubwordPrefix string            `json:"continuing_subword_prefix"`
	EndOfWordSuffix         string            `json:"end_of_word_suffix"`
	IgnoreMerges            bool              `json:"ignore_merges"`
}

// addedToken is one of added_tokens: a token matched as a whole, outside
// the BPE, such as <|endoftext|>.
type addedToken struct {
	ID      *int   `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

// byteLevelJSON is a ByteLevel pre-tokenizer or decoder's options.
type byteLevelJSON struct {
	Type           string `json:"type"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
}

// ReadTokenizerJSON reads a Hugging Face tokenizer.json. For now only a
// byte-level BPE with GPT-2's pre-tokenizer is accepted (GPT-2 and the
// models that reuse its tokenizer); anything else is an error naming what
// the file holds. The end and beginning of text are <|endoftext|> when the
// file has it.
func ReadTokenizerJSON(path string) (Tokenizer, error) {
	raw, err := readTokenizerFile(path)
	if err != nil {
		return nil, err
	}
	t, err := parseTokenizerJSON(raw, path)
	if err != nil {
		return nil, err // not a nil *byteBPE inside a non-nil Tokenizer
	}
	return t, nil
}

// parseTokenizerJSON builds a tokenizer from a tokenizer.json's contents,
// naming it name in errors.
func parseTokenizerJSON(raw []byte, name string) (*byteBPE, error) {
	spec, err := tokenizerJSONSpec(raw, name)
	if err != nil {
		return nil, errors.Wrap(err, name)
	}
	return newGPT2BPE(spec)
}

// tokenizerJSONSpec checks what a tokenizer.json holds and gathers its
// vocabulary, merges and added tokens.
func tokenizerJSONSpec(raw []byte, name string) (bpeSpec, error) {
	if err := checkJSON(raw); err != nil {
		return bpeSpec{}, err
	}
	var file tokenizerJSON
	if err := json.Unmarshal(raw, &file); err != nil {
		return bpeSpec{}, decodeError(err)
	}
	if err := checkSupported(file); err != nil {
		return bpeSpec{}, err
	}
	if isNull(file.Model.Vocab) {
		return bpeSpec{}, errors.New("model.vocab is missing")
	}
	vocab, err := parseVocab(file.Model.Vocab)
	if err != nil {
		return bpeSpec{}, errors.Wrap(err, "model.vocab")
	}
	merges, err := parseMergesJSON(file.Model.Merges)
	if err != nil {
		return bpeSpec{}, err
	}
	specials, err := parseAddedTokens(file.AddedTokens)
	if err != nil {
		return bpeSpec{}, err
	}
	return bpeSpec{
		vocab: vocab, merges: merges, specials: specials, ignoreMerges: file.Model.IgnoreMerges,
		vocabWhere: name + ": model.vocab", mergesFile: name,
		mergeWhere: func(i int) string { return fmt.Sprintf("model.merges[%d]", i) },
	}, nil
}

// decodeError words encoding/json's type errors by the file's own key.
func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return errors.Errorf("%s is a JSON %s: want %s", typeErr.Field, msg.Shorten(typeErr.Value), jsonKind(typeErr.Type.Kind()))
	}
	return errors.New("unexpected JSON: " + msg.Shorten(err.Error()))
}

// jsonKind names a Go kind as the JSON a reader would write.
func jsonKind(kind reflect.Kind) string {
	switch kind {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int:
		return "an integer"
	}
	return "a number"
}

// checkSupported refuses a tokenizer.json whose model, normalizer,
// pre-tokenizer or decoder is not GPT-2's, naming what it holds.
func checkSupported(file tokenizerJSON) error {
	m := file.Model
	switch {
	case m == nil:
		return errors.New("no model")
	case m.Type != "BPE":
		return errors.Errorf("model.type is %s: only a byte-level BPE (as GPT-2's) is supported", msg.Quote(m.Type))
	case m.Dropout != nil && *m.Dropout != 0:
		return errors.Errorf("model.dropout is %g: a tokenizer that drops merges at random is not supported", *m.Dropout)
	case m.ContinuingSubwordPrefix != "" || m.EndOfWordSuffix != "":
		return errors.New("model has a continuing_subword_prefix or end_of_word_suffix: a byte-level BPE has neither")
	case !isNull(file.Normalizer):
		return errors.Errorf("normalizer is %s: a byte-level BPE as GPT-2's has none", componentType(file.Normalizer))
	}
	if err := checkByteLevel("pre_tokenizer", file.PreTokenizer, true); err != nil {
		return err
	}
	return checkByteLevel("decoder", file.Decoder, false)
}

// checkByteLevel refuses a component other than GPT-2's ByteLevel; a
// decoder may also be absent.
func checkByteLevel(key string, raw json.RawMessage, required bool) error {
	if isNull(raw) && !required {
		return nil
	}
	var bl byteLevelJSON
	if isNull(raw) || json.Unmarshal(raw, &bl) != nil || bl.Type != "ByteLevel" {
		return errors.Errorf("%s is %s: only ByteLevel (GPT-2's) is supported", key, componentType(raw))
	}
	if key != "pre_tokenizer" {
		return nil
	}
	if bl.AddPrefixSpace {
		return errors.New("pre_tokenizer.add_prefix_space is true: only GPT-2's split, without an added space, is supported")
	}
	if bl.UseRegex != nil && !*bl.UseRegex {
		return errors.New("pre_tokenizer.use_regex is false: only GPT-2's split is supported")
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// componentType names a normalizer's or pre-tokenizer's kind for a message:
// its type, with the types of a Sequence's parts.
func componentType(raw json.RawMessage) string {
	if isNull(raw) {
		return "missing"
	}
	var c struct {
		Type          string            `json:"type"`
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
		Normalizers   []json.RawMessage `json:"normalizers"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Type == "" {
		return "not an object with a type"
	}
	parts := append(c.PreTokenizers, c.Normalizers...)
	if len(parts) == 0 {
		return msg.Clean(c.Type)
	}
	types := make([]string, len(parts))
	for i, p := range parts {
		types[i] = componentType(p)
	}
	return msg.Clean(c.Type + " [" + strings.Join(types, ", ") + "]")
}

// parseMergesJSON reads model.merges: "a b" strings, as older files write
// them, or [a, b] pairs, as newer ones do.
func parseMergesJSON(raw []json.RawMessage) ([][2]string, error) {
	merges := make([][2]string, len(raw))
	for i, r := range raw {
		var pair []string
		var line string
		switch {
		case json.Unmarshal(r, &line) == nil:
			a, b, ok := strings.Cut(line, " ")
			if !ok || strings.Contains(b, " ") {
				return nil, errors.Errorf("model.merges[%d] is %s: want two tokens and one space (\"a b\")", i, msg.Quote(line))
			}
			pair = []string{a, b}
		case json.Unmarshal(r, &pair) != nil:
			return nil, errors.Errorf("model.merges[%d] is %s: want \"a b\" or [\"a\", \"b\"]", i, showJSON(r))
		}
		if len(pair) != 2 || pair[0] == "" || pair[1] == "" {
			return nil, errors.Errorf("model.merges[%d] is %s: want two tokens", i, showJSON(r))
		}
		merges[i] = [2]string{pair[0], pair[1]}
	}
	return merges, nil
}

// parseAddedTokens reads added_tokens. Each must be special: Encode treats
// special tokens' names as text, and a non-special added token, which
// Hugging Face matches in text, would silently encode differently.
func parseAddedTokens(tokens []addedToken) (map[string]int, error) {
	specials := make(map[string]int, len(tokens))
	for i, t := range tokens {
		switch {
		case t.ID == nil:
			return nil, errors.Errorf("added_tokens[%d] has no id", i)
		case t.Content == "":
			return nil, errors.Errorf("added_tokens[%d] (id %d) has no content", i, *t.ID)
		case !t.Special:
			return nil, errors.Errorf("added token %s (id %d) is not special: added tokens matched in text are not supported",
				msg.Quote(t.Content), *t.ID)
		}
		if id, dup := specials[t.Content]; dup {
			return nil, errors.Errorf("added token %s appears twice (ids %d and %d)", msg.Quote(t.Content), id, *t.ID)
		}
		specials[t.Content] = *t.ID
	}
	return specials, nil
}
