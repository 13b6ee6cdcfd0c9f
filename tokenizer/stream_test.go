package tokenizer

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// badMerge254 is issue 42's tokenizer.json: tinyTokenizerJSON whose merge
// 254 is three tokens, followed by tail merges more, so that the file is
// as large as the test wants.
func badMerge254(t testing.TB, tail int) []byte {
	var merges bytes.Buffer
	merges.WriteString(`[`)
	for range 254 {
		merges.WriteString(`"Ġ t",`)
	}
	merges.WriteString(`"a b c"`)
	for i := range tail {
		fmt.Fprintf(&merges, `,["x%d","y"]`, i)
	}
	merges.WriteString(`]`)
	doc := tinyTokenizerJSON(t, func(_, m map[string]any) { m["merges"] = "MERGES" })
	return bytes.Replace(doc, []byte(`"MERGES"`), merges.Bytes(), 1)
}

// TestTokenizerJSONRefusedAsRead: a tokenizer.json is checked as it is
// read, so a bad merge is refused having read the file only that far: a
// file of about 10 MB whose merge 254 is bad costs a small part of itself
// (it was read and decoded whole first: over three times its size).
func TestTokenizerJSONRefusedAsRead(t *testing.T) {
	raw := badMerge254(t, 700_000)
	path := writeFile(t, t.TempDir(), "tokenizer.json", raw)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadTokenizerJSON(path)
	runtime.ReadMemStats(&after)
	msgtest.Refusal(t, "bad merge 254", err, path+": ", `model.merges[254] is "a b c": want two tokens and one space`)
	if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(len(raw)/10); alloc > limit {
		t.Errorf("refusing allocated %d bytes, want at most %d (a tenth of the %d-byte file)", alloc, limit, len(raw))
	}
}

// TestTokenizerJSONPartsBounded: a value besides the vocabulary and the
// merges is checked token by token, so their bytes in all are bounded: a
// 20 MB normalizer is refused by its size.
func TestTokenizerJSONPartsBounded(t *testing.T) {
	raw := append([]byte(`{"normalizer":[`), bytes.Repeat([]byte("1,"), 10<<20)...)
	raw = append(raw, "1]}"...)
	_, err := parseTokenizerJSON(raw, "tokenizer.json")
	msgtest.Refusal(t, "a huge normalizer", err, "tokenizer.json: normalizer: the file's values besides model.vocab and model.merges pass 16777216 bytes")
}
