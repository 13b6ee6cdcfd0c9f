package main

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
)

// TestTextModelTokens: on a character-level text model -tokens reads each
// character exactly as typed (case kept; a digit, a comma and \n are
// characters; #N is an id) and -text reads text through the model's
// characters, the two giving the same output; a character the model lacks
// is one line naming it (and, for -text, the vocabulary's size), the
// -tokens error listing the characters in their own case.
func TestTextModelTokens(t *testing.T) {
	plainEnv(t, "100")
	ck, _, vocab := textCheckpoint(t, "kisIKaA 3,\n")
	tokens := func(args ...string) []string {
		return decode(t, runOK(t, append([]string{"-checkpoint", ck, "-json", "-samples", "1"}, args...)...)).Labels
	}
	for _, c := range []struct {
		tokens string
		want   []string
	}{
		{"k i s I K a A", []string{"k", "i", "s", "I", "K", "a", "A"}},
		{`3 , \n ␣ a`, []string{"3", ",", "\n", "␣", "a"}},
		{"#0 a", []string{vocab[0], "a"}},
	} {
		if got := tokens("-tokens", c.tokens); !slices.Equal(got, c.want) {
			t.Errorf("-tokens %q shows %q, want %q", c.tokens, got, c.want)
		}
	}
	byText := runOK(t, "-checkpoint", ck, "-json", "-samples", "1", "-text", "kisIK 3,")
	if byTokens := runOK(t, "-checkpoint", ck, "-json", "-samples", "1", "-tokens", "k i s I K ␣ 3 ,"); !bytes.Equal(byText, byTokens) {
		t.Error("-text and the same characters by -tokens give different output")
	}
	refused(t, "-text with a foreign character", []string{"-checkpoint", ck, "-text", "kiQ"},
		`-text: character "Q" at byte 2 is not in the model's vocabulary of `+strconv.Itoa(len(vocab))+" characters")
	refused(t, "-tokens with a foreign character", []string{"-checkpoint", ck, "-tokens", "k Q"},
		`-tokens: "Q" (token 1) is not a character of the model's`, " A I K ", "a i k s")
}
