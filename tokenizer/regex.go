package tokenizer

import (
	"strings"
	"time"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/dlclark/regexp2/v2"
	"github.com/pkg/errors"
)

// A Split's Regex is run by regexp2 (a backtracking engine with
// look-around, .NET's syntax, which writes the patterns of today's
// tokenizer.json files as Hugging Face's Oniguruma reads them). A
// backtracking engine can take exponential time on a hostile pattern, so
// every match has a deadline: splitMatchTimeout (regexp2 checks it about
// every 100 ms, so a match stops within about that much more). The
// patterns in use take microseconds a match.
const splitMatchTimeout = 200 * time.Millisecond

// probeRunLen is the length of each run of one character the pattern is
// tried on when the file is read (probeTexts): long enough that a pattern
// that backtracks exponentially or as a high power of the length passes
// its deadline there, not later on a user's text.
const probeRunLen = 2048

// probeTexts are runs of one character of each class the patterns in use
// tell apart, each ended by a character of another class.
func probeTexts() []string {
	var texts []string
	for _, c := range []string{"a", " ", "1", "\n", "!", "é", "中", "\t", "'"} {
		texts = append(texts, strings.Repeat(c, probeRunLen)+"\x00", strings.Repeat(c+" ", probeRunLen/2)+"\x00")
	}
	return texts
}

// compileSplitRegex compiles a Split's Regex, the value of key, and tries
// it on probeTexts, so that a pattern that does not compile, or that
// backtracks catastrophically, is refused as the file is read.
func compileSplitRegex(key, pattern string) (func(string) ([][]int, error), error) {
	re, err := regexp2.Compile(pattern)
	if err != nil {
		return nil, errors.Errorf("%s is %s: not a regular expression: %s", key, msg.Quote(pattern), msg.Clean(err.Error()))
	}
	re.MatchTimeout = splitMatchTimeout
	find := func(s string) ([][]int, error) {
		found, err := re.FindAllStringIndex(s, -1)
		if err != nil {
			return nil, errors.Errorf("%s: %s takes longer than %v on the text: the pattern backtracks catastrophically there",
				key, msg.Quote(pattern), splitMatchTimeout)
		}
		return found, nil
	}
	for _, text := range probeTexts() {
		if _, err := find(text); err != nil {
			return nil, errors.Errorf("%s is %s: a match takes longer than %v on a run of one character: the pattern backtracks catastrophically",
				key, msg.Quote(pattern), splitMatchTimeout)
		}
	}
	return find, nil
}
