package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/pkg/errors"
)

// tokenizerJSON is the part of a Hugging Face tokenizer.json that decides
// how text becomes ids, besides the vocabulary and the merges, which
// decodeTokenizerJSON reads apart, as they come.
type tokenizerJSON struct {
	Model         *bpeJSON // nil when the file has none
	Normalizer    json.RawMessage
	PreTokenizer  json.RawMessage
	PostProcessor json.RawMessage
	Decoder       json.RawMessage
	AddedTokens   []addedToken
}

// bpeJSON is model's members besides vocab and merges.
type bpeJSON struct {
	Type                    string   `json:"type"`
	Dropout                 *float64 `json:"dropout"`
	ContinuingSubwordPrefix string   `json:"continuing_subword_prefix"`
	EndOfWordSuffix         string   `json:"end_of_word_suffix"`
	IgnoreMerges            bool     `json:"ignore_merges"`
	ByteFallback            bool     `json:"byte_fallback"`
}

// addedToken is one of added_tokens: a token matched as a whole, outside
// the BPE, such as <|endoftext|>.
type addedToken struct {
	ID         *int   `json:"id"`
	Content    string `json:"content"`
	Special    bool   `json:"special"`
	Normalized bool   `json:"normalized"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
}

// ReadTokenizerJSON reads a Hugging Face tokenizer.json whose parts are
// built (readStages): a BPE, byte-level or with byte fallback, and the
// normalizer, pre-tokenizer, post-processor and decoder around it, run as
// Hugging Face's tokenizers runs them. GPT-2's own file keeps GPT-2's
// encoder's rules: <|endoftext|> is its beginning and end of text, and
// special tokens' names in text are text. Any other file's added tokens
// are matched in text as Hugging Face does (those marked normalized in
// normalized text, by their normalized names); its beginning of text is
// the first token the post-processor puts before the text (Encode puts
// them there too), else <s>, <|begin_of_text|> or <bos>, its end </s>,
// <|end_of_text|>, <|endoftext|> or <eos>, when the file has them. A part
// not built is an error naming its key, what it holds and what is built.
func ReadTokenizerJSON(path string) (Tokenizer, error) {
	f, err := safefile.OpenLimit(path, maxFileBytes, fileBound)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := readTokenizerJSON(f, path)
	if err != nil {
		return nil, err // not a nil *bpeTokenizer inside a non-nil Tokenizer
	}
	return t, nil
}

// DecodeTokenizerJSON is ReadTokenizerJSON of the content of a
// tokenizer.json its caller opened (so that the tokenizer is built from
// the bytes the caller hashes), named name in errors, with the same bound
// on its size.
func DecodeTokenizerJSON(r safefile.Sized, name string) (Tokenizer, error) {
	bounded, err := safefile.LimitSized(r, name, maxFileBytes, fileBound)
	if err != nil {
		return nil, err
	}
	t, err := readTokenizerJSON(bounded, name)
	if err != nil {
		return nil, err // not a nil *bpeTokenizer inside a non-nil Tokenizer
	}
	return t, nil
}

// parseTokenizerJSON builds a tokenizer from a tokenizer.json's contents,
// naming it name in errors.
func parseTokenizerJSON(raw []byte, name string) (*bpeTokenizer, error) {
	return readTokenizerJSON(bytes.NewReader(raw), name)
}

// readTokenizerJSON builds a tokenizer from a tokenizer.json read from r
// as it is decoded, naming it name in errors.
func readTokenizerJSON(r io.Reader, name string) (*bpeTokenizer, error) {
	spec, st, options, err := tokenizerJSONSpec(r, name)
	if err != nil {
		return nil, errors.Wrap(err, name)
	}
	if st.gpt2 {
		return newGPT2BPE(spec)
	}
	return newStagedBPE(spec, st, options, name)
}

// newStagedBPE is a tokenizer of the kinds beyond GPT-2's: added tokens
// matched in text, and the stages st; name names the file in errors.
func newStagedBPE(spec bpeSpec, st stages, options map[string]addedToken, name string) (*bpeTokenizer, error) {
	model, err := newBPEModel(spec)
	if err != nil {
		return nil, err
	}
	for _, id := range slices.Concat(st.template.before, st.template.after) {
		if id < 0 || id >= len(model.tokens) {
			return nil, errors.Errorf("%s: post_processor puts id %d around the text, outside the %d tokens", name, id, len(model.tokens))
		}
	}
	inText, inNormalized := splitAdded(spec.specials, options, st.normalize)
	t := &bpeTokenizer{
		model: model, added: newAddedTokens(inText), addedNormalized: newAddedTokens(inNormalized),
		normalize: st.normalize, pretokenize: st.pretokenize, stripSpaces: st.decoding.stripSpaces,
		bos:      tokenNamed(spec, "<s>", "<|begin_of_text|>", "<bos>"),
		eos:      tokenNamed(spec, "</s>", "<|end_of_text|>", endOfText, "<eos>"),
		template: st.template,
		name:     fmt.Sprintf("%s (%d tokens)", st.kind, len(model.tokens)),
	}
	if len(st.template.before) > 0 {
		t.bos = st.template.before[0]
	}
	return t, nil
}

// splitAdded parts added tokens into those matched in the raw text and
// those matched in normalized text, as Hugging Face does: by their names
// normalized too ("<s>" is "▁<s>" after Llama 2's normalizer), each with
// its options. A name the normalizer empties is never matched.
func splitAdded(tokens map[string]int, options map[string]addedToken, normalize func(string) string) (inText, inNormalized []addedName) {
	normalized := map[string]addedName{}
	for name, id := range tokens {
		o := options[name]
		t := addedName{name: name, id: id, lstrip: o.LStrip, rstrip: o.RStrip, wholeWord: o.SingleWord}
		if !o.Normalized {
			inText = append(inText, t)
			continue
		}
		if normalize != nil {
			t.name = normalize(name)
		}
		if earlier, dup := normalized[t.name]; t.name != "" && (!dup || id < earlier.id) {
			normalized[t.name] = t // of two names normalized alike, the first
		}
	}
	for _, t := range normalized {
		inNormalized = append(inNormalized, t)
	}
	return inText, inNormalized
}

// tokenNamed is the id of the first of names the vocabulary or the added
// tokens hold, -1 for none.
func tokenNamed(spec bpeSpec, names ...string) int {
	for _, name := range names {
		if id, ok := spec.specials[name]; ok {
			return id
		}
		if id, ok := spec.vocab[name]; ok {
			return id
		}
	}
	return -1
}

// tokenizerJSONSpec checks what a tokenizer.json holds and gathers its
// vocabulary, merges and added tokens (and which are matched in normalized
// text), and its stages.
func tokenizerJSONSpec(r io.Reader, name string) (bpeSpec, stages, map[string]addedToken, error) {
	d, err := decodeTokenizerJSON(r)
	if err != nil {
		return bpeSpec{}, stages{}, nil, err
	}
	file := d.file
	if err := checkModel(file.Model); err != nil {
		return bpeSpec{}, stages{}, nil, err
	}
	st, err := readStages(file)
	if err != nil {
		return bpeSpec{}, stages{}, nil, err
	}
	if d.vocab == nil {
		return bpeSpec{}, stages{}, nil, errors.New("model.vocab is missing")
	}
	vocab, merges := d.vocab, d.merges
	specials, options, err := parseAddedTokens(file.AddedTokens)
	if err != nil {
		return bpeSpec{}, stages{}, nil, err
	}
	return bpeSpec{
		vocab: vocab, merges: merges, mergeIDs: d.mergeIDs, specials: specials, ignoreMerges: file.Model.IgnoreMerges,
		holes: true, sentencePiece: !st.decoding.byteLevel, spaceMark: st.decoding.spaceMark, fallbackBytes: st.decoding.byteFallback, vocabWhere: name + ": model.vocab", mergesFile: name,
		mergeWhere: func(i int) string { return fmt.Sprintf("model.merges[%d]", i) },
	}, st, options, nil
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

// checkModel refuses a tokenizer.json whose model is not a BPE as built.
func checkModel(m *bpeJSON) error {
	switch {
	case m == nil:
		return errors.New("no model")
	case m.Type != "BPE":
		return errors.Errorf("model.type is %s: built is BPE (byte-level, or SentencePiece's with byte_fallback)", msg.Quote(m.Type))
	case m.Dropout != nil && *m.Dropout != 0:
		return errors.Errorf("model.dropout is %g: a tokenizer that drops merges at random is not supported", *m.Dropout)
	case m.ContinuingSubwordPrefix != "" || m.EndOfWordSuffix != "":
		return errors.New("model has a continuing_subword_prefix or end_of_word_suffix: the BPEs built have neither")
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// componentType names a stage's kind for a message:
// its type, with the types of a Sequence's parts.
func componentType(raw json.RawMessage) string {
	if isNull(raw) {
		return "missing"
	}
	var c struct {
		Type          string            `json:"type"`
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
		Normalizers   []json.RawMessage `json:"normalizers"`
		Decoders      []json.RawMessage `json:"decoders"`
		Processors    []json.RawMessage `json:"processors"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Type == "" {
		return "not an object with a type"
	}
	parts := slices.Concat(c.PreTokenizers, c.Normalizers, c.Decoders, c.Processors)
	if len(parts) == 0 {
		return msg.Clean(c.Type)
	}
	types := make([]string, len(parts))
	for i, p := range parts {
		types[i] = componentType(p)
	}
	return msg.Clean(c.Type + " [" + strings.Join(types, ", ") + "]")
}

// parseAddedTokens reads added_tokens: each name's id, and its options
// (matched in normalized text, lstrip, rstrip, single_word). GPT-2's kind
// (whose added tokens are all special, isGPT2) treats their names as text.
func parseAddedTokens(tokens []addedToken) (map[string]int, map[string]addedToken, error) {
	specials := make(map[string]int, len(tokens))
	options := make(map[string]addedToken, len(tokens))
	for i, t := range tokens {
		switch {
		case t.ID == nil:
			return nil, nil, errors.Errorf("added_tokens[%d] has no id", i)
		case t.Content == "":
			return nil, nil, errors.Errorf("added_tokens[%d] (id %d) has no content", i, *t.ID)
		}
		if id, dup := specials[t.Content]; dup {
			return nil, nil, errors.Errorf("added token %s appears twice (ids %d and %d)", msg.Quote(t.Content), id, *t.ID)
		}
		specials[t.Content] = *t.ID
		options[t.Content] = t
	}
	return specials, options, nil
}
