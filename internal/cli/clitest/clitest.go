// Package clitest finds the command lines the README and docs/*.md give,
// so that each command's tests can hold them to the flags it defines.
package clitest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// DocCommand is one "go run ./cmd/NAME ..." or "bin/NAME ..." (the binary
// the README's tour builds with go build -o bin/ ./cmd/...) of the docs:
// where it stands and its arguments, as a shell would split them.
type DocCommand struct {
	Where string // file:line
	Args  []string
}

// goRun finds a command line: go run, an optional -tags and ./cmd/NAME, or
// bin/NAME as a word of its own (not /usr/bin/time), and the rest of the
// line (or of the inline code span).
var goRun = regexp.MustCompile("(?:go run (?:-tags \\S+ )?\\./cmd/|(?:^|[\\s`(])bin/)(\\w+)([^`\\n]*)")

// DocCommands returns every command line of command name (train, inspect,
// ...) in root's README.md and docs/*.md, a line ending in \ joined to the
// next. It fails the test when there is none.
func DocCommands(t *testing.T, root, name string) []DocCommand {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var found []DocCommand
	for _, path := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(text), "\n")
		for i := 0; i < len(lines); i++ {
			at, line := i+1, lines[i]
			for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
				i++
				line = strings.TrimSuffix(line, "\\") + " " + lines[i]
			}
			for _, m := range goRun.FindAllStringSubmatch(line, -1) {
				if m[1] == name {
					found = append(found, DocCommand{Where: filepath.Base(path) + ":" + strconv.Itoa(at), Args: shellWords(m[2])})
				}
			}
		}
	}
	if len(found) == 0 {
		t.Fatalf("the docs under %s give no command line of %s", root, name)
	}
	return found
}

// READMECommands returns the command lines of name in root's README.md
// alone, in the README's order.
func READMECommands(t *testing.T, root, name string) []DocCommand {
	t.Helper()
	var found []DocCommand
	for _, c := range DocCommands(t, root, name) {
		if strings.HasPrefix(c.Where, "README.md:") {
			found = append(found, c)
		}
	}
	if len(found) == 0 {
		t.Fatalf("the README under %s gives no command line of %s", root, name)
	}
	return found
}

// shellWords splits s as a shell would, for the docs' simple lines: words
// apart at blanks, quotes grouping, and the command ending at a comment, a
// pipe, a redirection or a ;.
func shellWords(s string) []string {
	var words []string
	var word strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case !inWord && (r == '#' || r == '|' || r == '>' || r == ';' || r == '&'):
			return words
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}

// CheckDocCommands fails for each command line of name in root's docs
// that run, the command, refuses or notes on stderr (an old flag name
// does): each runs with -h after it, which stops it once its flags parse.
func CheckDocCommands(t *testing.T, root, name string, run func(args []string, stdout, stderr io.Writer) error) {
	t.Helper()
	for _, c := range DocCommands(t, root, name) {
		var stdout, stderr bytes.Buffer
		if err := run(append(c.Args, "-h"), &stdout, &stderr); err != nil || stderr.Len() > 0 {
			t.Errorf("%s: %s %s: %v %s", c.Where, name, strings.Join(c.Args, " "), err, stderr.String())
		}
	}
}
