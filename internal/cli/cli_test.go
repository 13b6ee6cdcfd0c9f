package cli

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/pkg/errors"
)

// mainHelperEnv makes the test binary, started again by TestMainExits, run
// Main with the arguments after "--" instead of its tests.
const mainHelperEnv = "CLI_MAIN_HELPER"

// TestMainHelper is Main's command when mainHelperEnv is set: it fails with
// its first argument, or succeeds and prints "ran" when there is none;
// "interrupted" stops as SIGINT would, "interrupted MESSAGE" as SIGTERM
// with MESSAGE.
func TestMainHelper(t *testing.T) {
	if os.Getenv(mainHelperEnv) == "" {
		return
	}
	os.Args = append([]string{"demo"}, os.Args[slices.Index(os.Args, "--")+1:]...)
	Main("demo", func(args []string, stdout, stderr io.Writer) error {
		switch {
		case len(args) > 1 && args[0] == "interrupted":
			return &Interrupted{Signal: syscall.SIGTERM, Message: args[1]}
		case len(args) > 0 && args[0] == "interrupted":
			return &Interrupted{Signal: syscall.SIGINT}
		case len(args) > 0:
			return errors.New(args[0])
		}
		fmt.Fprintln(stdout, "ran")
		return nil
	})
	os.Exit(0)
}

// TestMainExits: a failing run is one line on stderr after the command's
// name and exit status 1; a run that succeeds writes only its output and
// exits 0; one a signal stopped exits 128 plus the signal's number, with
// its message if it has one.
func TestMainExits(t *testing.T) {
	for _, c := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{nil, 0, "ran\n", ""},
		{[]string{"-x: bad value"}, 1, "", "demo: -x: bad value\n"},
		{[]string{"interrupted"}, 130, "", ""},
		{[]string{"interrupted", "stopped early"}, 143, "", "demo: stopped early\n"},
	} {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestMainHelper$", "--"}, c.args...)...)
		cmd.Env = append(os.Environ(), mainHelperEnv+"=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || stdout.String() != c.stdout || stderr.String() != c.stderr {
			t.Errorf("args %q: exit %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, stdout.String(), stderr.String(), c.code, c.stdout, c.stderr)
		}
	}
}

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
