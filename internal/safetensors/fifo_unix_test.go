//go:build unix

package safetensors

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/attnscope/attnscope/internal/safefile"
)

// TestReadFileRefusesNonRegular: a named pipe with no writer (open() would
// wait for one forever), a device that never ends and a directory are each
// refused by ReadFile and Open before anything is read, with a message
// saying what the path is.
func TestReadFileRefusesNonRegular(t *testing.T) {
	pipe := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	for _, c := range []struct {
		path, want string
	}{
		{pipe, "safetensors file " + pipe + ": open: is a named pipe, not a regular file"},
		{"/dev/zero", "safetensors file /dev/zero: open: is a character device, not a regular file"},
		{t.TempDir(), "is a directory, not a regular file"},
	} {
		_, _, err := ReadFile(c.path)
		if err == nil || !errors.Is(err, safefile.ErrNotRegular) || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("ReadFile(%s): %v, want %q", c.path, err, c.want)
		}
		// Open leaves the *os.PathError for its caller to word.
		_, err = Open(c.path, MaxFileLen)
		var pe *os.PathError
		if !errors.Is(err, safefile.ErrNotRegular) || !errors.As(err, &pe) || pe.Path != c.path {
			t.Errorf("Open(%s): %v, want an *os.PathError for it wrapping ErrNotRegular", c.path, err)
		}
	}
}
