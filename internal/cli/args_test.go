package cli

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// newOperandSet is a command's flags for these tests: -n, the bool -all,
// -set, and -count and -every, renamed -n and -all, whose notes go to
// notes.
func newOperandSet(notes *bytes.Buffer) (*flag.FlagSet, *int, *bool) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	n := fs.Int("n", 1, "how many")
	all := fs.Bool("all", false, "every one")
	fs.Func("set", "a key", func(string) error { return nil })
	Rename(fs, "count", "n", notes)
	Rename(fs, "every", "all", notes)
	return fs, n, all
}

// TestParseArgs: the operand may stand before, between or after the flags
// and after "--" even when it looks like a flag; every argument after it
// is refused by name, with the -set the user meant when one is a split
// -set value; a command of flags only refuses any.
func TestParseArgs(t *testing.T) {
	model := Operand{Name: "model"}
	for _, c := range []struct {
		args    []string
		operand Operand
		arg     string
		n       int
		all     bool
		err     string
	}{
		{[]string{"runs/a", "-n", "3"}, model, "runs/a", 3, false, ""},
		{[]string{"-n", "3", "runs/a", "-all"}, model, "runs/a", 3, true, ""},
		{[]string{"-all", "--", "-runs"}, model, "-runs", 1, true, ""},
		{[]string{"-n", "2"}, model, "", 2, false, ""},
		{[]string{"a", "-n", "2", "b"}, model, "", 0, false, `unexpected argument "b" (one model, already given as "a"; see -h)`},
		{[]string{"a", "b", "-all", "c"}, model, "", 0, false, `unexpected arguments "b", "c" (one model, already given as "a"; see -h)`},
		{[]string{"a", "-set", "k", "v"}, model, "", 0, false, `unexpected argument "v" (one model, already given as "a"; see -h) (did you mean -set k=v?)`},
		{[]string{"-all", "a"}, Operand{}, "", 0, false, `unexpected argument "a" (flags only; see -h)`},
	} {
		fs, n, all := newOperandSet(&bytes.Buffer{})
		arg, helped, err := ParseArgs(fs, c.args, "usage: x\n", &bytes.Buffer{}, c.operand)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || helped || arg != c.arg || *n != c.n || *all != c.all {
			t.Errorf("%q: arg %q, -n %d, -all %v, helped %v, err %v; want %q, %d, %v", c.args, arg, *n, *all, helped, err, c.arg, c.n, c.all)
		}
	}
}

// TestRename: an old name sets the new flag (a boolean one standing alone),
// counts as the new flag given, notes the new name once, and is left out
// of -h.
func TestRename(t *testing.T) {
	var notes bytes.Buffer
	fs, n, all := newOperandSet(&notes)
	if _, err := Parse(fs, []string{"-count", "4", "-every", "-count=5"}, "usage: x\n", &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	wantNotes := "note: -count is now called -n (the old name still works)\nnote: -every is now called -all (the old name still works)\n"
	if *n != 5 || !*all || !given["n"] || !given["all"] || notes.String() != wantNotes {
		t.Errorf("-n %d, -all %v, given %v, notes %q; want 5, true, n and all given, %q", *n, *all, given, notes.String(), wantNotes)
	}
	var help bytes.Buffer
	fs, _, _ = newOperandSet(&notes)
	if helped, _ := Parse(fs, []string{"-h"}, "usage: x\n", &help); !helped || strings.Contains(help.String(), "-count") || strings.Contains(help.String(), "-every") || !strings.Contains(help.String(), "how many (default 1)") {
		t.Errorf("-h wrote %q; want the flags without their old names", help.String())
	}
}

// TestFlagOrArg: the flag or the operand, either alone, or both naming the
// same path, give it; two different paths are refused naming both.
func TestFlagOrArg(t *testing.T) {
	for _, c := range []struct{ flag, arg, want, err string }{
		{"runs/a", "", "runs/a", ""},
		{"", "runs/a", "runs/a", ""},
		{"runs/a/", "./runs/a", "./runs/a", ""},
		{"", "", "", ""},
		{"runs/a", "runs/b", "", `-checkpoint "runs/a" and the argument "runs/b" name different paths; give one`},
	} {
		got, err := FlagOrArg("checkpoint", c.flag, c.arg)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("FlagOrArg(%q, %q) = %q, %v; want %q, %q", c.flag, c.arg, got, err, c.want, c.err)
		}
	}
}
