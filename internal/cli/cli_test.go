package cli

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// TestParse: flags parse; -h writes the usage and the defaults to help and
// reports helped; a bad flag, a bad value and a stray argument are one-line
// errors ending in "see -h" that write nothing.
func TestParse(t *testing.T) {
	newSet := func() (*flag.FlagSet, *int) {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		return fs, fs.Int("n", 1, "how many")
	}
	var help bytes.Buffer
	fs, n := newSet()
	if helped, err := Parse(fs, []string{"-n", "3"}, "usage: x\n", &help); helped || err != nil || *n != 3 || help.Len() > 0 {
		t.Errorf("-n 3: helped %v, err %v, n %d, wrote %q", helped, err, *n, help.String())
	}
	fs, _ = newSet()
	if helped, err := Parse(fs, []string{"-h"}, "usage: x\n", &help); !helped || err != nil || !strings.HasPrefix(help.String(), "usage: x\n") || !strings.Contains(help.String(), "how many (default 1)") {
		t.Errorf("-h: helped %v, err %v, wrote %q", helped, err, help.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-m"}, "bad flags (see -h): flag provided but not defined: -m"},
		{[]string{"-n", "many"}, `bad flags (see -h): invalid value "many" for flag -n: parse error`},
		{[]string{"-n", "2", "extra"}, `unexpected argument "extra" (flags only; see -h)`},
	} {
		help.Reset()
		fs, _ = newSet()
		helped, err := Parse(fs, c.args, "usage: x\n", &help)
		if helped || err == nil || err.Error() != c.want || help.Len() > 0 {
			t.Errorf("%q: helped %v, err %v, wrote %q; want error %q", c.args, helped, err, help.String(), c.want)
		}
	}
}

// TestSuggestions: a mistyped flag names the nearest one; a config key
// given as a flag, or a -set split at the space, names the -set that was
// meant; nothing is suggested for a name unlike any flag or key.
func TestSuggestions(t *testing.T) {
	keys := []string{"model.heads", "train.steps", "train.lr"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-confg", "a.yaml"}, "bad flags (see -h): flag provided but not defined: -confg (did you mean -config?)"},
		{[]string{"-steps", "10"}, "bad flags (see -h): flag provided but not defined: -steps (did you mean -set train.steps=10?)"},
		{[]string{"--lr"}, "bad flags (see -h): flag provided but not defined: -lr (did you mean -set train.lr=VALUE?)"},
		{[]string{"-set", "model.heads", "8"}, `unexpected argument "8" (flags only; see -h) (did you mean -set model.heads=8?)`},
		{[]string{"-zzzzzz"}, "bad flags (see -h): flag provided but not defined: -zzzzzz"},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.String("config", "", "")
		var sets []string
		fs.Func("set", "", func(s string) error { sets = append(sets, s); return nil })
		_, err := Parse(fs, c.args, "usage: x\n", &bytes.Buffer{}, keys...)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: error %v, want %q", c.args, err, c.want)
		}
	}
}
