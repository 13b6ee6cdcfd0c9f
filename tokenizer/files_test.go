package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// tinyVocab is a small byte-level vocabulary: the 256 byte tokens (ids 0..255
// in byte order), "Ġt", "he", "Ġthe" (what tinyMerges make), "xyz" (which no
// merge makes) and <|endoftext|> = 260.
func tinyVocab() map[string]int {
	vocab := make(map[string]int, 261)
	for b := range 256 {
		vocab[string(byteRunes[b])] = b
	}
	for i, name := range []string{"Ġt", "he", "Ġthe", "xyz", endOfText} {
		vocab[name] = 256 + i
	}
	return vocab
}

const tinyMerges = "#version: 0.2\nĠ t\nh e\nĠt he\n"

func vocabJSON(t *testing.T, vocab map[string]int) string {
	t.Helper()
	b, err := json.Marshal(vocab)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withToken is tinyVocab with name given id (a new name, or one moved).
func withToken(name string, id int) map[string]int {
	v := tinyVocab()
	v[name] = id
	return v
}

// withoutByte is tinyVocab less the token of byte b, the ids after it moved
// down to keep them 0..n-1.
func withoutByte(b byte) map[string]int {
	v := tinyVocab()
	delete(v, string(byteRunes[b]))
	for name, id := range v {
		if id > int(b) {
			v[name] = id - 1
		}
	}
	return v
}

// TestGPT2FilesEncode: a small vocabulary merges as its merges say, keeps
// a token no merge reaches out of reach, and names <|endoftext|>.
func TestGPT2FilesEncode(t *testing.T) {
	dir := t.TempDir()
	tok, err := ReadGPT2Files(writeFile(t, dir, "vocab.json", []byte(vocabJSON(t, tinyVocab()))),
		writeFile(t, dir, "merges.txt", []byte(strings.ReplaceAll(tinyMerges, "\n", "\r\n"))))
	if err != nil {
		t.Fatal(err)
	}
	checkTinyEncodings(t, tok, false)
}

// checkTinyEncodings checks what a tokenizer of tinyVocab and tinyMerges
// makes of a few texts; with ignoreMerges, a piece that is a whole token.
func checkTinyEncodings(t *testing.T, tok Tokenizer, ignoreMerges bool) {
	t.Helper()
	xyz := []int{'x', 'y', 'z'}
	if ignoreMerges {
		xyz = []int{259}
	}
	for text, want := range map[string][]int{
		" the":   {258},
		"the":    {'t', 257},
		" then":  {258, 'n'},
		"xyz":    xyz,
		" thé":   {256, 'h', 0xc3, 0xa9},
		"a\tthe": {'a', '\t', 't', 257},
	} {
		if got, err := tok.Encode(text); err != nil || !slices.Equal(got, want) {
			t.Errorf("%q encodes to %v (%v), want %v", text, got, err, want)
		}
	}
	if tok.Size() != 261 || tok.EOS() != 260 || tok.BOS() != 260 {
		t.Errorf("size %d, EOS %d, BOS %d; want 261 tokens, <|endoftext|> = 260", tok.Size(), tok.EOS(), tok.BOS())
	}
}

// TestGPT2FilesRefused: each malformed vocab.json or merges.txt is refused
// in one line naming the file and the problem.
func TestGPT2FilesRefused(t *testing.T) {
	valid := vocabJSON(t, tinyVocab())
	cases := []struct {
		name, vocab, merges string
		want                []string // the message names the file too
	}{
		{"vocab not JSON", "{\"a\": 1", tinyMerges, []string{"vocab.json", "not JSON"}},
		{"vocab empty file", "", tinyMerges, []string{"vocab.json", "not JSON"}},
		{"vocab an array", "[1, 2]", tinyMerges, []string{"vocab.json", "not a JSON object"}},
		{"vocab two values", valid + " {}", tinyMerges, []string{"vocab.json", "more data after the value"}},
		{"vocab key twice", strings.Replace(valid, "{", `{"!":7,`, 1), tinyMerges, []string{"vocab.json", `key "!" appears twice`}},
		{"id a fraction", vocabJSON(t, tinyVocab())[:1] + `"new":1.5,` + valid[1:], tinyMerges, []string{`"new" has id 1.5: want an integer`}},
		{"id a string", `{"new":"5",` + valid[1:], tinyMerges, []string{`"new" has id "5": want an integer`}},
		{"id shared", vocabJSON(t, withToken("new", 36)), tinyMerges, []string{"vocab.json", `id 36 belongs to both "$" and "new"`}},
		{"ids with a gap", vocabJSON(t, withToken("new", 1000)), tinyMerges, []string{`"new" has id 1000: the 262 tokens need ids 0..261`}},
		{"negative id", vocabJSON(t, withToken("new", -1)), tinyMerges, []string{`"new" has id -1`}},
		{"not byte-level", vocabJSON(t, withToken("€", 261)), tinyMerges, []string{`token "€" (id 261) holds "€", which is not one of GPT-2's byte-level characters`}},
		{"empty vocabulary", "{}", "", []string{"vocab.json", "the vocabulary is empty"}},
		{"merge of an unknown token", valid, tinyMerges + "Ġ q\n", []string{"merges.txt: line 5: merge", `merge "Ġ" "q": "Ġq" is not in the vocabulary`}},
		{"merge of a non-token", valid, tinyMerges + "Ġq e\n", []string{"merges.txt: line 5", `"Ġq" is not in the vocabulary`}},
		{"merge twice", valid, tinyMerges + "h e\n", []string{"merges.txt: line 5: merge \"h\" \"e\" repeats line 3"}},
		{"merge without a space", valid, tinyMerges + "he\n", []string{"merges.txt", `line 5: "he" is not a merge`}},
		{"merge of three", valid, tinyMerges + "a b c\n", []string{"merges.txt", `line 5: "a b c" is not a merge`}},
		{"empty line", valid, "#version: 0.2\n\nĠ t\n", []string{"merges.txt", `line 2: "" is not a merge`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := ReadGPT2Files(writeFile(t, dir, "vocab.json", []byte(c.vocab)), writeFile(t, dir, "merges.txt", []byte(c.merges)))
			msgtest.Refusal(t, c.name, err, c.want...)
		})
	}
}

// TestUnreadableFilesRefused: a missing file, a directory and a file over
// the size limit (sparse, so nothing is written) are refused by name before
// anything is read.
func TestUnreadableFilesRefused(t *testing.T) {
	dir := t.TempDir()
	merges := writeFile(t, dir, "merges.txt", []byte(tinyMerges))
	huge := writeFile(t, dir, "huge.json", nil)
	if err := os.Truncate(huge, maxFileBytes+1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want string
	}{
		{filepath.Join(dir, "missing.json"), "no such file"},
		{dir, "is a directory, not a regular file"},
		{huge, "more than the 67108864 bytes a tokenizer file may hold"},
	} {
		_, err := ReadGPT2Files(c.path, merges)
		msgtest.Refusal(t, "vocab.json "+c.path, err, c.path, c.want)
		_, err = ReadTokenizerJSON(c.path)
		msgtest.Refusal(t, "tokenizer.json "+c.path, err, c.path, c.want)
	}
}

// TestNoByteTokenNamesCharacter: text holding a byte the vocabulary has no
// token for is refused, naming the character and its offset.
func TestNoByteTokenNamesCharacter(t *testing.T) {
	dir := t.TempDir()
	tok, err := ReadGPT2Files(writeFile(t, dir, "vocab.json", []byte(vocabJSON(t, withoutByte(0xa9)))),
		writeFile(t, dir, "merges.txt", []byte(tinyMerges)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tok.Encode("the café")
	msgtest.Refusal(t, "é without its second byte", err, `character "é" at byte 7`, "byte 0xa9")
}
