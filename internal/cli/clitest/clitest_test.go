package clitest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestShellWords: blanks split, quotes group (and go), and a comment, a
// pipe, a redirection or a ; ends the command.
func TestShellWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{` runs/copy -layer 0  -head 0`, []string{"runs/copy", "-layer", "0", "-head", "0"}},
		{` -prompt "func Index(s string) int {" -n 160`, []string{"-prompt", "func Index(s string) int {", "-n", "160"}},
		{` -set 'train.eval_lengths=[8, 12, 16]' # a comment`, []string{"-set", "train.eval_lengths=[8, 12, 16]"}},
		{` -tokens "" -x`, []string{"-tokens", "", "-x"}},
		{` -go-only | tee out; echo done`, []string{"-go-only"}},
		{` -png a#b.png > log`, []string{"-png", "a#b.png"}},
	} {
		if got := shellWords(c.in); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", c.want) {
			t.Errorf("shellWords(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestDocCommands: the command lines of one command in the README and
// docs/*.md, run by go run or as a built bin/NAME, in code blocks and inline
// code, a line ending in \ joined to the next, each with its file and first
// line; other commands' lines, and /usr/bin/NAME, are left out.
func TestDocCommands(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "```sh\ngo run ./cmd/train -config a.yaml   # a run\ngo run ./cmd/inspect runs/a\nbin/train -config c.yaml\n/usr/bin/train -x\n```\n")
	write("docs/more.md", "Run `go run ./cmd/train -resume runs/a` or\n\n  go run ./cmd/train -config b.yaml \\\n    -set seed=$seed\nand (`bin/train -fresh`).\n")
	got := fmt.Sprintf("%q", DocCommands(t, root, "train"))
	want := fmt.Sprintf("%q", []DocCommand{
		{"README.md:2", []string{"-config", "a.yaml"}},
		{"README.md:4", []string{"-config", "c.yaml"}},
		{"more.md:1", []string{"-resume", "runs/a"}},
		{"more.md:3", []string{"-config", "b.yaml", "-set", "seed=$seed"}},
		{"more.md:5", []string{"-fresh"}},
	})
	if got != want {
		t.Errorf("DocCommands = %s, want %s", got, want)
	}
}
