package tokenizer

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"golang.org/x/text/unicode/norm"
)

// tinySentencePieceJSON is a SentencePiece-style tokenizer.json as Llama
// 2's is written, after edit: <unk> <s> </s> = 0, 1, 2, the byte tokens
// <0x00>..<0xFF> = 3..258, then ▁ t h e ▁t he ▁the = 259..265.
func tinySentencePieceJSON(t testing.TB, edit func(doc, model map[string]any)) []byte {
	t.Helper()
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := range 256 {
		vocab[fallbackName(byte(b))] = 3 + b
	}
	for i, name := range []string{"▁", "t", "h", "e", "▁t", "he", "▁the"} {
		vocab[name] = 259 + i
	}
	model := map[string]any{
		"type": "BPE", "dropout": nil, "unk_token": "<unk>", "continuing_subword_prefix": nil, "end_of_word_suffix": nil,
		"fuse_unk": true, "byte_fallback": true, "vocab": vocab, "merges": []string{"▁ t", "h e", "▁t he"},
	}
	special := func(id int, name string) map[string]any {
		return map[string]any{"id": id, "content": name, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
	}
	doc := map[string]any{
		"version":      "1.0",
		"added_tokens": []any{special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}}},
		"pre_tokenizer": nil,
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{1}, "tokens": []string{"<s>"}}}},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0}}},
		"model": model,
	}
	if edit != nil {
		edit(doc, model)
	}
	return marshal(t, doc)
}

// tinySplitJSON is tinyTokenizerJSON with Llama 3's pre-tokenizer and
// Qwen 2's normalizer, and two added tokens, one the start of the other:
// <a> = 261, <a>b = 262.
func tinySplitJSON(t testing.TB, edit func(doc, model map[string]any)) []byte {
	t.Helper()
	return tinyTokenizerJSON(t, func(doc, model map[string]any) {
		doc["normalizer"] = map[string]any{"type": "NFC"}
		doc["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": llama3Pattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}}}
		doc["added_tokens"] = []any{
			map[string]any{"id": 260, "content": endOfText, "special": true},
			map[string]any{"id": 261, "content": "<a>", "special": true},
			map[string]any{"id": 262, "content": "<a>b", "special": false}}
		if edit != nil {
			edit(doc, model)
		}
	})
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseTiny(t testing.TB, raw []byte) *bpeTokenizer {
	t.Helper()
	tok, err := parseTokenizerJSON(raw, "tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestTinyLlamaFamilyEncodes: a SentencePiece tokenizer puts "▁" first and
// for each space, falls back to bytes for a character it lacks, matches
// added tokens whole, and Encode puts <s> first as its post-processor
// does; a Split one takes the longest of the added tokens that start at a
// place, and composes (NFC) before it splits.
func TestTinyLlamaFamilyEncodes(t *testing.T) {
	sp := parseTiny(t, tinySentencePieceJSON(t, nil))
	split := parseTiny(t, tinySplitJSON(t, nil))
	byteID := func(b byte) int { return 3 + int(b) }
	for _, c := range []struct {
		tok     *bpeTokenizer
		text    string
		want    []int
		decoded string
	}{
		{sp, "the", []int{265}, "the"},
		{sp, " the", []int{259, 265}, " the"},
		{sp, "thé", []int{263, 261, byteID(0xc3), byteID(0xa9)}, "thé"},
		{sp, "<s>the</s>", []int{1, 265, 2}, "<s> the</s>"},
		{sp, "x", []int{259, byteID('x')}, "x"},
		{sp, "", []int{}, ""},
		{split, "x<a>by<a>", []int{'x', 262, 'y', 261}, "x<a>by<a>"},
		{split, " the<|endoftext|>", []int{258, 260}, " the<|endoftext|>"},
		{split, "e\u0301", []int{0xc3, 0xa9}, "é"},
	} {
		got, err := c.tok.encodeText(nil, c.text)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %q encodes to %v (%v), want %v", c.tok.Name(), c.text, got, err, c.want)
		}
		withBOS, err := c.tok.Encode(c.text)
		if c.tok == sp {
			got = append([]int{1}, got...)
		}
		if err != nil || !slices.Equal(withBOS, got) {
			t.Errorf("%s: Encode(%q) = %v (%v), want %v", c.tok.Name(), c.text, withBOS, err, got)
		}
		if d := string(Decode(c.tok, c.want)); d != c.decoded {
			t.Errorf("%s: %v decodes to %q, want %q", c.tok.Name(), c.want, d, c.decoded)
		}
	}
	for _, c := range []struct {
		tok            Tokenizer
		name           string
		size, bos, eos int
	}{
		{sp, "SentencePiece BPE (266 tokens)", 266, 1, 2},
		{split, "Llama 3's byte-level BPE (263 tokens)", 263, -1, 260},
	} {
		if c.tok.Name() != c.name || c.tok.Size() != c.size || c.tok.BOS() != c.bos || c.tok.EOS() != c.eos {
			t.Errorf("%s: size %d, BOS %d, EOS %d; want %s, %d, %d, %d", c.tok.Name(), c.tok.Size(), c.tok.BOS(),
				c.tok.EOS(), c.name, c.size, c.bos, c.eos)
		}
	}
}

// otherEOS wraps a tokenizer to change its EOS, as a caller whose model
// names another does.
type otherEOS struct{ Tokenizer }

func (otherEOS) EOS() int            { return 0 }
func (w otherEOS) Unwrap() Tokenizer { return w.Tokenizer }

// TestDecodeThroughWrapper: Decode reads through a Wrapper to the
// tokenizer's own decoder, which drops SentencePiece's first space.
func TestDecodeThroughWrapper(t *testing.T) {
	sp := parseTiny(t, tinySentencePieceJSON(t, nil))
	if d := string(Decode(otherEOS{sp}, []int{265})); d != "the" {
		t.Errorf("through a wrapper, ▁the decodes to %q, want \"the\"", d)
	}
}

// TestByteFallbackStream: a stream of byte-fallback tokens writes a
// character once its last byte comes, and keeps the leading space (it
// continues a text).
func TestByteFallbackStream(t *testing.T) {
	sp := parseTiny(t, tinySentencePieceJSON(t, nil))
	ids, err := sp.encodeText(nil, "世")
	if err != nil || len(ids) != 4 {
		t.Fatalf("世 encodes to %v (%v), want ▁ and three bytes", ids, err)
	}
	s := NewStream(sp)
	var wrote []string
	for _, id := range ids {
		wrote = append(wrote, string(s.Push(id)))
	}
	if want := []string{" ", "", "", "世"}; !slices.Equal(wrote, want) {
		t.Errorf("the stream wrote %q, want %q", wrote, want)
	}
}

// TestTinyMissingByteToken: a SentencePiece vocabulary without a byte's
// token refuses a character it would need, naming it.
func TestTinyMissingByteToken(t *testing.T) {
	tok := parseTiny(t, tinySentencePieceJSON(t, func(_, m map[string]any) {
		vocab := m["vocab"].(map[string]int)
		delete(vocab, "<0xA9>")
		for name, id := range vocab {
			if id > 3+0xa9 {
				vocab[name] = id - 1
			}
		}
	}))
	_, err := tok.Encode("a é")
	msgtest.Refusal(t, "é without <0xA9>", err, `character "é"`, "byte 0xa9")
}

// TestLlamaFamilyRefused: a tokenizer.json with a part not built, or
// parts that do not go together, is refused in one line naming the key
// path, what it holds and what is built; a Split pattern that is not a
// regular expression or that backtracks catastrophically is refused as
// the file is read.
func TestLlamaFamilyRefused(t *testing.T) {
	sp := func(edit func(doc, model map[string]any)) []byte { return tinySentencePieceJSON(t, edit) }
	split := func(edit func(doc, model map[string]any)) []byte { return tinySplitJSON(t, edit) }
	setPre := func(i int, key string, v any) func(doc, _ map[string]any) {
		return func(doc, _ map[string]any) {
			doc["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[i].(map[string]any)[key] = v
		}
	}
	decoders := func(edit func(ds []any) []any) func(doc, _ map[string]any) {
		return func(doc, _ map[string]any) {
			d := doc["decoder"].(map[string]any)
			d["decoders"] = edit(d["decoders"].([]any))
		}
	}
	single := func(parts ...any) func(doc, _ map[string]any) {
		return func(doc, _ map[string]any) { doc["post_processor"].(map[string]any)["single"] = parts }
	}
	special := func(name string) any { return map[string]any{"SpecialToken": map[string]any{"id": name}} }
	seqA := map[string]any{"Sequence": map[string]any{"id": "A"}}
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"bad regex", split(setPre(0, "pattern", map[string]any{"Regex": `(\p{L}+`})),
			`pre_tokenizer.pretokenizers[0].pattern.Regex is "(\\p{L}+": not a regular expression`},
		{"catastrophic regex", split(setPre(0, "pattern", map[string]any{"Regex": `(a|aa)+$|\s+`})),
			`pre_tokenizer.pretokenizers[0].pattern.Regex is "(a|aa)+$|\\s+": a match takes longer than 200ms on a run of one character`},
		{"pattern both", split(setPre(0, "pattern", map[string]any{"String": " ", "Regex": " "})),
			"pre_tokenizer.pretokenizers[0].pattern has neither or both of String and Regex"},
		{"split behavior", split(setPre(0, "behavior", "Merged")),
			`pre_tokenizer.pretokenizers[0].behavior is "Merged": want Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous`},
		{"byte level first", split(func(doc, _ map[string]any) {
			pre := doc["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)
			pre[0], pre[1] = pre[1], pre[0]
		}), "pre_tokenizer.pretokenizers[1] follows a ByteLevel: built is ByteLevel last"},
		{"split then digits", split(setPre(1, "type", "Digits")),
			"model.byte_fallback is false and the pre-tokenizer has no ByteLevel"},
		{"whitespace", split(setPre(0, "type", "Whitespace")),
			`pre_tokenizer.pretokenizers[0].type is "Whitespace": built are ByteLevel, Split, Metaspace, Digits, Punctuation and a Sequence of them`},
		{"lowercase", split(func(d, _ map[string]any) { d["normalizer"] = map[string]any{"type": "Lowercase"} }),
			`normalizer.type is "Lowercase": built are NFC, NFD, NFKC, NFKD, Prepend, Replace of a String and a Sequence of them`},
		{"precompiled in a sequence", sp(func(d, _ map[string]any) {
			d["normalizer"].(map[string]any)["normalizers"].([]any)[1] = map[string]any{"type": "Precompiled"}
		}), `normalizer.normalizers[1].type is "Precompiled": built are`},
		{"replace by regex", sp(func(d, _ map[string]any) {
			d["normalizer"].(map[string]any)["normalizers"].([]any)[1].(map[string]any)["pattern"] = map[string]any{"Regex": " "}
		}), "normalizer.normalizers[1].pattern is not a String: built is Replace of a String"},
		{"roberta", split(func(d, _ map[string]any) { d["post_processor"] = map[string]any{"type": "RobertaProcessing"} }),
			`post_processor.type is "RobertaProcessing": built are ByteLevel, TemplateProcessing and a Sequence of them`},
		{"byte level with fallback", sp(func(d, _ map[string]any) {
			d["normalizer"], d["pre_tokenizer"] = nil, map[string]any{"type": "ByteLevel"}
		}), "model.byte_fallback is true with a ByteLevel pre-tokenizer: built is one of the two"},
		{"metaspace replacement", sp(func(d, _ map[string]any) {
			d["normalizer"], d["pre_tokenizer"] = nil, map[string]any{"type": "Metaspace", "replacement": "_"}
		}), `pre_tokenizer.replacement is "_": built is "▁"`},
		{"metaspace scheme", sp(func(d, _ map[string]any) {
			d["normalizer"], d["pre_tokenizer"] = nil, map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"}
		}), `pre_tokenizer.prepend_scheme is "sometimes": want always, first or never`},
		{"byte level decoder", sp(func(d, _ map[string]any) { d["decoder"] = map[string]any{"type": "ByteLevel"} }),
			"decoder is ByteLevel, but the pre-tokenizer has none"},
		{"wordpiece decoder", sp(decoders(func(ds []any) []any { return append(ds, map[string]any{"type": "WordPiece"}) })),
			`decoder.decoders[4].type is "WordPiece": built are ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace and a Sequence of them`},
		{"strip from the end", sp(decoders(func(ds []any) []any {
			ds[3] = map[string]any{"type": "Strip", "content": " ", "start": 0, "stop": 1}
			return ds
		})), `decoder.decoders[3] is a Strip other than of " " from the start of the text (after a Fuse)`},
		{"strip before fuse", sp(decoders(func(ds []any) []any { return []any{ds[0], ds[1], ds[3], ds[2]} })),
			`decoder.decoders[2] is a Strip other than of " " from the start of the text (after a Fuse)`},
		{"no byte fallback", sp(func(_, m map[string]any) { m["byte_fallback"] = false }),
			"model.byte_fallback is false and the pre-tokenizer has no ByteLevel"},
		{"two texts", sp(single(seqA, seqA)), `post_processor.single is "$A $A": built is special tokens, "$A" once, special tokens`},
		{"bos not listed", sp(single(special("<bos>"), seqA)), `post_processor.special_tokens has no "<bos>", which single puts around the text`},
		{"bos out of range", sp(func(d, _ map[string]any) {
			d["post_processor"].(map[string]any)["special_tokens"] = map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{9999}}}
		}), "post_processor puts id 9999 around the text, outside the 266 tokens"},
		{"unigram", sp(func(_, m map[string]any) { m["type"] = "Unigram" }), `model.type is "Unigram": built is BPE`},
	} {
		_, err := parseTokenizerJSON(c.raw, "tokenizer.json")
		msgtest.Refusal(t, c.name, err, "tokenizer.json: ", c.want)
	}
}

// FuzzLlamaFamilyRoundTrip: a SentencePiece and a Split tokenizer encode
// any text, UTF-8 or not, without an error; the Split one's ids decode to
// the text composed (NFC), added tokens included; the SentencePiece one's
// to the text, when the text holds neither "▁" (a space to it) nor an
// added token's name (after which its normalizer puts a "▁").
func FuzzLlamaFamilyRoundTrip(f *testing.F) {
	for _, seed := range []string{"", " the  the", "<s>x</s> y", "x<a>by<a>b", "e\u0301\r\n\r\n  12345", "a\xffb\xe4\xb8", "'S 'll\u0085\ufeff", "▁x"} {
		f.Add(seed)
	}
	sp := parseTiny(f, tinySentencePieceJSON(f, nil))
	split := parseTiny(f, tinySplitJSON(f, nil))
	f.Fuzz(func(t *testing.T, text string) {
		ids, err := split.Encode(text)
		if err != nil {
			t.Fatalf("split: %q: %v", text, err)
		}
		if want := norm.NFC.String(text); string(Decode(split, ids)) != want {
			t.Fatalf("split: %q decodes to %q, want %q", text, Decode(split, ids), want)
		}
		if ids, err = sp.encodeText(nil, text); err != nil {
			t.Fatalf("SentencePiece: %q: %v", text, err)
		}
		if d := Decode(sp, ids); !hasAny(text, metaspace, "<s>", "</s>", "<unk>") && !bytes.Equal(d, []byte(text)) {
			t.Fatalf("SentencePiece: %q decodes to %q", text, d)
		}
		for _, maxDigits := range []int{1, 3} {
			checkPieces(t, text, func(s string) int { return llama3PieceLen(s, maxDigits) })
		}
	})
}

func hasAny(s string, subs ...string) bool {
	return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
}

// checkPieces checks that a pre-tokenizer cuts s into pieces that are not
// empty and join to s.
func checkPieces(t *testing.T, s string, pieceLen func(string) int) {
	t.Helper()
	for rest := s; rest != ""; {
		n := pieceLen(rest)
		if n <= 0 || n > len(rest) {
			t.Fatalf("%q: a piece of %d bytes of %q", s, n, rest)
		}
		rest = rest[n:]
	}
}
