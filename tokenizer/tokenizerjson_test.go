package tokenizer

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// tinyTokenizerJSON is tinyVocab and tinyMerges as a Hugging Face
// tokenizer.json, after edit changes the document.
func tinyTokenizerJSON(t testing.TB, edit func(doc, model map[string]any)) []byte {
	t.Helper()
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	model := map[string]any{
		"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "", "end_of_word_suffix": "",
		"fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
		"vocab": tinyVocab(), "merges": []string{"Ġ t", "h e", "Ġt he"},
	}
	doc := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil,
		"added_tokens":   []any{map[string]any{"id": 260, "content": endOfText, "special": true, "normalized": true}},
		"normalizer":     nil,
		"pre_tokenizer":  byteLevel,
		"post_processor": byteLevel,
		"decoder":        byteLevel,
		"model":          model,
	}
	if edit != nil {
		edit(doc, model)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readTinyTokenizerJSON(t *testing.T, raw []byte) (Tokenizer, error) {
	t.Helper()
	return ReadTokenizerJSON(writeFile(t, t.TempDir(), "tokenizer.json", raw))
}

// TestTokenizerJSONEncodes: merges written as "a b" strings or as [a, b]
// pairs encode alike; ignore_merges makes a piece that is a whole token
// that token; an added token beyond the vocabulary gets its own id.
func TestTokenizerJSONEncodes(t *testing.T) {
	for _, c := range []struct {
		name         string
		edit         func(doc, model map[string]any)
		ignoreMerges bool
	}{
		{"merges as strings", nil, false},
		{"merges as pairs", func(_, m map[string]any) { m["merges"] = [][]string{{"Ġ", "t"}, {"h", "e"}, {"Ġt", "he"}} }, false},
		{"ignore_merges", func(_, m map[string]any) { m["ignore_merges"] = true }, true},
		{"no decoder", func(d, _ map[string]any) { delete(d, "decoder") }, false},
	} {
		tok, err := readTinyTokenizerJSON(t, tinyTokenizerJSON(t, c.edit))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		checkTinyEncodings(t, tok, c.ignoreMerges)
	}
	tok, err := readTinyTokenizerJSON(t, tinyTokenizerJSON(t, func(d, _ map[string]any) {
		d["added_tokens"] = append(d["added_tokens"].([]any), map[string]any{"id": 261, "content": "<|im_end|>", "special": true})
	}))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Size() != 262 || string(tok.Token(261)) != "<|im_end|>" {
		t.Errorf("an added token: size %d, token 261 %q; want 262 tokens, 261 = <|im_end|>", tok.Size(), tok.Token(261))
	}
	if ids, err := tok.Encode("<|im_end|>"); err != nil || len(ids) < 2 {
		t.Errorf("an added token's name in text encodes to %v (%v), want it spelled out as text", ids, err)
	}
	// With ignore_merges, a special token in the vocabulary whose name is
	// not byte-level text ("€") is not what the text "€" encodes to.
	tok, err = readTinyTokenizerJSON(t, tinyTokenizerJSON(t, func(d, m map[string]any) {
		m["ignore_merges"] = true
		m["vocab"] = withToken("€", 261)
		d["added_tokens"] = append(d["added_tokens"].([]any), map[string]any{"id": 261, "content": "€", "special": true})
	}))
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := tok.Encode("€"); err != nil || !slices.Equal(ids, []int{0xe2, 0x82, 0xac}) {
		t.Errorf("\"€\" encodes to %v (%v), want its three bytes' tokens", ids, err)
	}
}

// TestTokenizerJSONRefused: a tokenizer.json that is not GPT-2's kind, or is
// malformed, is refused in one line naming the file and what it holds.
func TestTokenizerJSONRefused(t *testing.T) {
	edited := func(edit func(doc, model map[string]any)) []byte { return tinyTokenizerJSON(t, edit) }
	valid := string(edited(nil))
	metaspace := map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}
	cases := []struct {
		name string
		raw  []byte
		want []string
	}{
		{"not JSON", []byte("tokenizer"), []string{"not JSON: invalid character 'o' in literal true (expecting 'r') at byte 2"}},
		{"empty", nil, []string{"not JSON: it ends early, at byte 0"}},
		{"two values", []byte(valid + valid), []string{"more data after the value"}},
		{"key twice", []byte(strings.Replace(valid, `{`, `{"model":null,`, 1)), []string{`key "model" appears twice in the top-level object`}},
		{"vocab key twice", []byte(strings.Replace(valid, `"vocab":{`, `"vocab":{"!":0,`, 1)), []string{`key "!" appears twice in model.vocab`}},
		{"too deep", []byte(`{"normalizer":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "}"), []string{"JSON nests deeper than 32 levels"}},
		{"not an object", []byte(`[]`), []string{"unexpected JSON: the file is a JSON array, not an object"}},
		{"syntax inside a value", []byte(`{"normalizer": [1,,2]}`), []string{"not JSON: invalid character ',' looking for beginning of value at byte 17"}},
		{"added id a string", edited(func(d, _ map[string]any) {
			d["added_tokens"] = []any{map[string]any{"id": "260", "content": endOfText, "special": true}}
		}), []string{"added_tokens.id is a JSON string: want an integer"}},
		{"dropout a string", edited(func(_, m map[string]any) { m["dropout"] = "0" }), []string{"model.dropout is a JSON string: want a number"}},
		{"id not an integer", edited(func(_, m map[string]any) { m["vocab"] = map[string]any{"a": 1.5} }), []string{`model.vocab: token "a" has id 1.5: want an integer`}},
		{"model an array", []byte(`{"model": []}`), []string{"model is a JSON array: want an object"}},
		{"no model", []byte(`{"version": "1.0"}`), []string{"no model"}},
		{"unigram", edited(func(_, m map[string]any) { m["type"] = "Unigram" }), []string{`model.type is "Unigram": built is BPE`}},
		{"wordpiece", edited(func(_, m map[string]any) { m["type"] = "WordPiece" }), []string{`model.type is "WordPiece"`}},
		{"metaspace", edited(func(d, _ map[string]any) { d["pre_tokenizer"] = metaspace }), []string{"model.byte_fallback is false and the pre-tokenizer has no ByteLevel"}},
		{"no pre_tokenizer", edited(func(d, _ map[string]any) { d["pre_tokenizer"] = nil }), []string{"model.byte_fallback is false and the pre-tokenizer has no ByteLevel"}},
		{"sequence", edited(func(d, _ map[string]any) {
			d["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "x"}}, map[string]any{"type": "ByteLevel"}}}
		}), []string{`pre_tokenizer.pretokenizers[0].behavior is "": want Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous`}},
		{"metaspace decoder", edited(func(d, _ map[string]any) { d["decoder"] = metaspace }), []string{"decoder is not ByteLevel: built for a byte-level BPE is ByteLevel"}},
		{"dropout", edited(func(_, m map[string]any) { m["dropout"] = 0.1 }), []string{"model.dropout is 0.1"}},
		{"suffix", edited(func(_, m map[string]any) { m["end_of_word_suffix"] = "</w>" }), []string{"end_of_word_suffix"}},
		{"no vocab", edited(func(_, m map[string]any) { delete(m, "vocab") }), []string{"model.vocab is missing"}},
		{"vocab an array", edited(func(_, m map[string]any) { m["vocab"] = []int{1} }), []string{"model.vocab: the vocabulary is not a JSON object"}},
		{"merges not a list", edited(func(_, m map[string]any) { m["merges"] = "Ġ t" }), []string{"model.merges is a JSON string: want an array"}},
		{"merge a number", edited(func(_, m map[string]any) { m["merges"] = []any{"Ġ t", 5} }), []string{`model.merges[1] is 5: want "a b" or ["a", "b"]`}},
		{"merge of one", edited(func(_, m map[string]any) { m["merges"] = []any{[]string{"h"}} }), []string{`model.merges[0] is ["h"]: want two tokens`}},
		{"merge of three", edited(func(_, m map[string]any) { m["merges"] = []any{"a b c"} }), []string{`model.merges[0] is "a b c": want two tokens and one space`}},
		{"merge unknown", edited(func(_, m map[string]any) { m["merges"] = []any{"Ġ t", "Ġ q"} }), []string{`model.merges[1]: merge "Ġ" "q": "Ġq" is not in the vocabulary`}},
		{"merge twice", edited(func(_, m map[string]any) { m["merges"] = []any{"Ġ t", "Ġ t"} }), []string{`model.merges[1]: merge "Ġ" "t" repeats model.merges[0]`}},
		{"id shared", edited(func(_, m map[string]any) { m["vocab"] = withToken("new", 36) }), []string{`model.vocab: id 36 belongs to both "$" and "new"`}},
		{"added without id", edited(func(d, _ map[string]any) {
			d["added_tokens"] = []any{map[string]any{"content": "<x>", "special": true}}
		}), []string{"added_tokens[0] has no id"}},
		{"added twice", edited(func(d, _ map[string]any) {
			d["added_tokens"] = []any{map[string]any{"id": 260, "content": endOfText, "special": true},
				map[string]any{"id": 261, "content": endOfText, "special": true}}
		}), []string{`added token "<|endoftext|>" appears twice (ids 260 and 261)`}},
		{"added id disagrees", edited(func(d, _ map[string]any) {
			d["added_tokens"] = []any{map[string]any{"id": 5, "content": endOfText, "special": true}}
		}), []string{`added token "<|endoftext|>" has id 5, but the vocabulary gives it 260`}},
		{"added id taken", edited(func(d, _ map[string]any) {
			d["added_tokens"] = []any{map[string]any{"id": 36, "content": "<x>", "special": true}}
		}), []string{`id 36 belongs to both "$" and "<x>"`}},
	}
	for _, c := range cases {
		_, err := readTinyTokenizerJSON(t, c.raw)
		msgtest.Refusal(t, c.name, err, append(c.want, "tokenizer.json: ")...)
	}
}

// FuzzParseTokenizerJSON: any bytes give a tokenizer or a one-line error,
// never a panic; a tokenizer it gives encodes to ids it has, and, if of
// GPT-2's kind, round-trips what it can encode (the other kinds' stages
// may change text for good: NFC, "▁" a space, a space after an added
// token).
func FuzzParseTokenizerJSON(f *testing.F) {
	f.Add(tinyTokenizerJSON(f, nil))
	f.Add(tinySentencePieceJSON(f, nil))
	f.Add(tinySplitJSON(f, nil))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[["a","a"]]},"pre_tokenizer":{"type":"ByteLevel"},"added_tokens":[{"id":1,"content":"x","special":true}]}`))
	f.Add([]byte(`{"model":{"type":"BPE","byte_fallback":true,"vocab":{"<0x61>":0,"▁":1},"merges":[]},"pre_tokenizer":{"type":"Metaspace","replacement":"▁"},` +
		`"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}]},` +
		`"added_tokens":[{"id":2,"content":"a","special":false,"normalized":true}]}`))
	f.Add([]byte(`{"model":{"type":"Unigram"}}`))
	// The parts beyond the listed files': each pre-tokenizer, a regex, a template with a token after.
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},"normalizer":{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Prepend","prepend":"a"}]},` +
		`"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},{"type":"Punctuation","behavior":"Contiguous"},` +
		`{"type":"Split","pattern":{"Regex":"(?<=a)b|\\s+(?!\\S)"},"behavior":"MergedWithNext","invert":true},{"type":"Split","pattern":{"String":"b"},"behavior":"MergedWithPrevious"},` +
		`{"type":"ByteLevel","add_prefix_space":true,"use_regex":false}]},` +
		`"post_processor":{"type":"TemplateProcessing","single":[{"Sequence":{"id":"A"}},{"SpecialToken":{"id":"b"}}],"special_tokens":{"b":{"ids":[1]}}}}`))
	// Issue 42's bad merge 254, in small, and entries refused as they are read.
	f.Add(badMerge254(f, 3))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1.5},"merges":[]},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b","a c"]},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		tok, err := parseTokenizerJSON(raw, "tokenizer.json")
		if err != nil {
			msgtest.Refusal(t, "fuzzed tokenizer.json", err, "tokenizer.json")
			return
		}
		for _, text := range []string{"ab", " a\tb", "\xff", "a<s>b"} {
			ids, err := tok.Encode(text)
			if err != nil {
				msgtest.Refusal(t, "encoding "+text, err, "has no token")
				continue
			}
			for _, id := range ids {
				if id < 0 || id >= tok.Size() {
					t.Fatalf("%q encodes to id %d of %d", text, id, tok.Size())
				}
			}
			if d := Decode(tok, ids); isGPT2Kind(tok) && string(d) != text {
				t.Fatalf("%q decodes to %q", text, d)
			}
		}
	})
}

// isGPT2Kind is whether tok is of GPT-2's kind: no stage but its
// pre-tokenizer.
func isGPT2Kind(tok *bpeTokenizer) bool {
	return !tok.added.any && !tok.addedNormalized.any && tok.normalize == nil && tok.stripSpaces == 0
}
