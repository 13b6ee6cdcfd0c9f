package tokenizer

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/pkg/errors"
)

// maxMerges bounds model.merges: each merge makes a token of the
// vocabulary, and a merge twice is refused, so a file holds no more merges
// than a vocabulary may hold tokens.
const maxMerges = maxVocab

// maxPartsBytes bounds what a tokenizer.json holds besides model.vocab and
// model.merges, all of it: its stages and added tokens take a few kilobytes
// (Gemma 3's six thousand added tokens under a megabyte). Each of those
// values is checked token by token, so the bound keeps that walk short.
const maxPartsBytes = 16 << 20

// jsonStream decodes a tokenizer.json a value at a time, as it is read,
// with checkJSON's rules (no key twice, nesting at most maxJSONDepth deep)
// applied to each value as it is decoded. model.vocab and model.merges,
// nearly all of a file, are decoded an entry at a time and each entry is
// checked as it comes, so a bad entry is refused having read the file only
// that far, and no more than the vocabulary and the merges is ever held.
type jsonStream struct {
	dec   *json.Decoder
	src   *splicer        // what dec reads
	raw   json.RawMessage // the entry being checked, reused
	parts int             // the bytes of the values decoded whole so far
}

// decodedTokenizerJSON is what a jsonStream decodes: the file's small
// parts as tokenizerJSON holds them, and its vocabulary and merges,
// checked entry by entry.
type decodedTokenizerJSON struct {
	file     tokenizerJSON
	vocab    map[string]int // nil when model.vocab is missing or null
	merges   [][2]string
	mergeIDs [][3]int32 // the merges as ids, read after the vocabulary (splicer)
}

// decodeTokenizerJSON decodes a tokenizer.json from r.
func decodeTokenizerJSON(r io.Reader) (decodedTokenizerJSON, error) {
	return decodeThrough(newSplicer(r))
}

// decodeThrough decodes a tokenizer.json that src reads.
func decodeThrough(src *splicer) (decodedTokenizerJSON, error) {
	s := &jsonStream{dec: json.NewDecoder(src), src: src}
	s.dec.UseNumber() // a number is checked where it is used, not as a float64
	d, err := s.decodeAll()
	switch {
	case src.err != nil:
		return d, src.err // what the decoder made of it follows from it
	case err != nil:
		return d, err
	}
	if src.vocab != nil {
		d.vocab = src.vocab
	}
	if src.mergesRead {
		d.merges, d.mergeIDs = src.merges, src.mergeIDs
	}
	return d, nil
}

// decodeAll decodes the file: the top-level object, then its end.
func (s *jsonStream) decodeAll() (decodedTokenizerJSON, error) {
	var d decodedTokenizerJSON
	tok, err := s.token()
	if err != nil {
		return d, err
	}
	if tok != json.Delim('{') {
		return d, errors.Errorf("unexpected JSON: the file is %s, not an object", jsonTokenKind(tok))
	}
	err = s.members("the top-level object", func(key string) error {
		switch key {
		case "model":
			return s.model(&d)
		case "added_tokens":
			raw, err := s.value(key, 1)
			if err == nil {
				err = unmarshalAt(raw, key, &d.file.AddedTokens)
			}
			return err
		}
		raw, err := s.value(key, 1)
		switch key {
		case "normalizer":
			d.file.Normalizer = raw
		case "pre_tokenizer":
			d.file.PreTokenizer = raw
		case "post_processor":
			d.file.PostProcessor = raw
		case "decoder":
			d.file.Decoder = raw
		}
		return err
	})
	if err != nil {
		return d, err
	}
	if _, err := s.dec.Token(); err != io.EOF {
		if err != nil {
			return d, s.syntax(err)
		}
		return d, errors.Errorf("not JSON: more data after the value, at byte %d", s.src.fileOffset(s.dec.InputOffset()))
	}
	return d, nil
}

// token is the decoder's next token, its error worded by jsonSyntax.
func (s *jsonStream) token() (json.Token, error) {
	tok, err := s.dec.Token()
	if err != nil {
		return nil, s.syntax(err)
	}
	return tok, nil
}

// members walks the members of the object whose '{' was just read,
// refusing a key twice (naming the object where, as checkJSON does); visit
// decodes each value.
func (s *jsonStream) members(where string, visit func(key string) error) error {
	seen := map[string]bool{}
	for s.dec.More() {
		tok, err := s.token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // Token gives an object's keys as strings
		if seen[key] {
			return errors.Errorf("key %s appears twice in %s", msg.Quote(key), msg.Clean(where))
		}
		seen[key] = true
		if err := visit(key); err != nil {
			return err
		}
	}
	_, err := s.token() // the '}'
	return err
}

// value decodes the next value, at path and nested depth levels deep in
// the file, and checks it as checkJSON would have.
func (s *jsonStream) value(path string, depth int) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := s.decode(&raw); err != nil {
		return nil, err
	}
	return raw, s.check(raw, path, depth)
}

// check counts raw against maxPartsBytes and checks it as checkJSONAt
// does.
func (s *jsonStream) check(raw json.RawMessage, path string, depth int) error {
	if s.parts += len(raw); s.parts > maxPartsBytes {
		return errors.Errorf("%s: the file's values besides model.vocab and model.merges pass %d bytes, more than a tokenizer.json holds", msg.Clean(path), maxPartsBytes)
	}
	return checkJSONAt(raw, path, depth)
}

// decode decodes the next value into v, with jsonSyntax's words for an
// error (the decoder gives a syntax error's offset in the whole file).
func (s *jsonStream) decode(v any) error {
	if err := s.dec.Decode(v); err != nil {
		return s.syntax(err)
	}
	return nil
}

// syntax words a decoder error by jsonSyntax, at the byte of the file (the
// splicer passes on less than the file).
func (s *jsonStream) syntax(err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		moved := *syntax
		moved.Offset = s.src.fileOffset(syntax.Offset)
		err = &moved
	}
	return jsonSyntax(err, s.src.fileOffset(s.dec.InputOffset()))
}

// model decodes the value of "model": its small members into d.file.Model
// (the type first checked as soon as it is read), its vocabulary and
// merges an entry at a time.
func (s *jsonStream) model(d *decodedTokenizerJSON) error {
	tok, err := s.token()
	switch {
	case err != nil:
		return err
	case tok == nil:
		return nil // null: no model
	case tok != json.Delim('{'):
		return errors.Errorf("model is %s: want an object", jsonTokenKind(tok))
	}
	small := []byte{'{'}
	err = s.members("model", func(key string) error {
		switch key {
		case "vocab":
			return s.vocab(d)
		case "merges":
			return s.merges(d)
		}
		raw, err := s.value("model."+key, 2)
		if err != nil {
			return err
		}
		if key == "type" {
			var m bpeJSON
			if err := unmarshalAt(append(appendMember([]byte{'{'}, key, raw), '}'), "model", &m); err != nil {
				return err
			}
			if err := checkModel(&bpeJSON{Type: m.Type}); err != nil {
				return err
			}
		}
		small = appendMember(small, key, raw)
		return nil
	})
	if err != nil {
		return err
	}
	d.file.Model = &bpeJSON{}
	return unmarshalAt(append(small, '}'), "model", d.file.Model)
}

// appendMember appends the member key: raw to the object begun in obj.
func appendMember(obj []byte, key string, raw json.RawMessage) []byte {
	if len(obj) > 1 {
		obj = append(obj, ',')
	}
	name, _ := json.Marshal(key) // a string always encodes
	return append(append(append(obj, name...), ':'), raw...)
}

// vocab decodes model.vocab an entry at a time, refusing an id that is
// not an integer, a token twice, or more tokens than a vocabulary may
// hold, as each entry is read.
func (s *jsonStream) vocab(d *decodedTokenizerJSON) error {
	tok, err := s.token()
	switch {
	case err != nil:
		return err
	case tok == nil:
		return nil // null: missing
	case tok != json.Delim('{'):
		return errors.New("model.vocab: the vocabulary is not a JSON object of token: id")
	}
	d.vocab = map[string]int{}
	for s.dec.More() {
		tok, err := s.token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		if _, twice := d.vocab[name]; twice {
			return errors.Errorf("key %s appears twice in model.vocab", msg.Quote(name))
		}
		if len(d.vocab) == maxVocab {
			return errors.Errorf("model.vocab: more than %d tokens, the most a vocabulary may hold", maxVocab)
		}
		if err := s.decode(&s.raw); err != nil {
			return err
		}
		id, ok := parseJSONInt(s.raw)
		if !ok {
			if err := s.check(s.raw, "model.vocab."+name, 3); err != nil {
				return err
			}
			return errors.Errorf("model.vocab: token %s has id %s: want an integer", msg.Quote(name), showJSON(s.raw))
		}
		d.vocab[name] = id
	}
	_, err = s.token() // the '}'
	return err
}

// merges decodes model.merges a merge at a time, refusing one that is not
// two tokens (or, when the vocabulary came first, as Hugging Face writes
// it, whose tokens it does not hold) as it is read.
func (s *jsonStream) merges(d *decodedTokenizerJSON) error {
	vocabSeen := d.vocab != nil // as Hugging Face writes them: each merge is checked against it
	tok, err := s.token()
	switch {
	case err != nil:
		return err
	case tok == nil:
		return nil // null: none
	case tok != json.Delim('['):
		return errors.Errorf("model.merges is %s: want an array", jsonTokenKind(tok))
	}
	for i := 0; s.dec.More(); i++ {
		if i == maxMerges {
			return errors.Errorf("model.merges: more than %d merges, the most a vocabulary of at most %d tokens has", maxMerges, maxVocab)
		}
		if err := s.decode(&s.raw); err != nil {
			return err
		}
		pair, err := parseMerge(i, s.raw)
		if err != nil {
			if deep := s.check(s.raw, "model.merges[]", 3); deep != nil {
				return deep
			}
			return err
		}
		if vocabSeen {
			if err := mergeInVocab(d.vocab, pair, i); err != nil {
				return err
			}
		}
		d.merges = append(d.merges, pair)
	}
	_, err = s.token() // the ']'
	return err
}

// mergeInVocab refuses merge i when the vocabulary lacks a token it names
// or makes, with the message setMerges gives later.
func mergeInVocab(vocab map[string]int, pair [2]string, i int) error {
	for _, name := range []string{pair[0], pair[1], pair[0] + pair[1]} {
		if _, ok := vocab[name]; !ok {
			return errors.Errorf("model.merges[%d]: merge %s %s: %s is not in the vocabulary", i, msg.Quote(pair[0]), msg.Quote(pair[1]), msg.Quote(name))
		}
	}
	return nil
}

// unmarshalAt decodes raw, the value of key, into v, wording a type error
// by the file's own key ("added_tokens.id is a JSON string: want an
// integer").
func unmarshalAt(raw json.RawMessage, key string, v any) error {
	err := json.Unmarshal(raw, v)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := key
		if typeErr.Field != "" {
			field = key + "." + typeErr.Field
		}
		return errors.Errorf("%s is a JSON %s: want %s", field, msg.Shorten(typeErr.Value), jsonKind(typeErr.Type.Kind()))
	}
	if err != nil {
		return errors.New("unexpected JSON: " + msg.Shorten(err.Error()))
	}
	return nil
}

// jsonTokenKind names the kind of value whose first token is tok, as
// unmarshalAt does: "a JSON array".
func jsonTokenKind(tok json.Token) string {
	switch tok.(type) {
	case string:
		return "a JSON string"
	case json.Number:
		return "a JSON number"
	case bool:
		return "a JSON bool"
	}
	if tok == json.Delim('[') {
		return "a JSON array"
	}
	return "a JSON object"
}

// parseMerge reads merge i: "a b", as older files write it, or [a, b], as
// newer ones do.
func parseMerge(i int, r json.RawMessage) ([2]string, error) {
	var pair []string
	var line string
	switch {
	case json.Unmarshal(r, &line) == nil:
		a, b, ok := strings.Cut(line, " ")
		if !ok || strings.Contains(b, " ") {
			return [2]string{}, errors.Errorf("model.merges[%d] is %s: want two tokens and one space (\"a b\")", i, msg.Quote(line))
		}
		pair = []string{a, b}
	case json.Unmarshal(r, &pair) != nil:
		return [2]string{}, errors.Errorf("model.merges[%d] is %s: want \"a b\" or [\"a\", \"b\"]", i, showJSON(r))
	}
	if len(pair) != 2 || pair[0] == "" || pair[1] == "" {
		return [2]string{}, errors.Errorf("model.merges[%d] is %s: want two tokens", i, showJSON(r))
	}
	return [2]string{pair[0], pair[1]}, nil
}
