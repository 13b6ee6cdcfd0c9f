package tokenizer

import (
	"strings"
	"testing"
	"time"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// splitTokenizerJSON is tinySplitJSON with its Split's pattern replaced.
func splitTokenizerJSON(t *testing.T, pattern string) []byte {
	t.Helper()
	return tinySplitJSON(t, func(doc, _ map[string]any) {
		pre := doc["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)
		pre[0].(map[string]any)["pattern"] = map[string]any{"Regex": pattern}
	})
}

// TestCatastrophicSplitRefusedInTime: a Split pattern that backtracks
// exponentially on a run of one character is refused as the file is read,
// within about its deadline (200 ms, checked every 100 ms), not after the
// years the match would take.
func TestCatastrophicSplitRefusedInTime(t *testing.T) {
	start := time.Now()
	_, err := parseTokenizerJSON(splitTokenizerJSON(t, `(a+)+$|\s+|.`), "tokenizer.json")
	elapsed := time.Since(start)
	msgtest.Refusal(t, "(a+)+$", err, "tokenizer.json: pre_tokenizer.pretokenizers[0].pattern.Regex is", "backtracks catastrophically")
	if elapsed > 2*time.Second {
		t.Errorf("refusing took %v, want well under 2 s", elapsed)
	}
}

// TestSplitTimeoutWhenEncoding: a pattern that backtracks only on text the
// file's check does not try gives a one-line error naming the key when a
// text makes it, within about its deadline.
func TestSplitTimeoutWhenEncoding(t *testing.T) {
	tok, err := parseTokenizerJSON(splitTokenizerJSON(t, `(x+x+)+y|\s+|.`), "tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := tok.Encode("the xy"); err != nil || len(ids) == 0 {
		t.Fatalf("a short text: %v (%v)", ids, err)
	}
	start := time.Now()
	_, err = tok.Encode("the " + strings.Repeat("x", 64))
	elapsed := time.Since(start)
	msgtest.Refusal(t, "64 x", err, "pre_tokenizer.pretokenizers[0].pattern.Regex", "takes longer than 200ms on the text")
	if elapsed > 2*time.Second {
		t.Errorf("encoding took %v before it stopped, want well under 2 s", elapsed)
	}
}
