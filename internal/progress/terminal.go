package progress

import (
	"io"
	"os"

	"golang.org/x/term"
)

// DefaultWidth is the terminal width assumed when the size cannot be read.
const DefaultWidth = 80

// IsTerminal reports whether w is a terminal (a redrawn line) rather than
// a pipe or a file (plain log lines).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Width is f's width in columns, or DefaultWidth when it cannot be read.
func Width(f *os.File) int {
	if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
		return w
	}
	return DefaultWidth
}
