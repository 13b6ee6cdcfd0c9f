package safefile

import (
	"io/fs"
	"testing"
)

// TestKind names every file type, a character device (which has the device
// bit too) as such, and any other type by its mode.
func TestKind(t *testing.T) {
	for mode, want := range map[fs.FileMode]string{
		0o644:                             "a regular file",
		fs.ModeDevice | fs.ModeCharDevice: "a character device",
		fs.ModeDevice:                     "a device",
		fs.ModeDir | 0o755:                "a directory",
		fs.ModeNamedPipe:                  "a named pipe",
		fs.ModeSymlink:                    "a symlink",
		fs.ModeSocket:                     "a socket",
		fs.ModeIrregular:                  "not a regular file (?---------)",
	} {
		if got := Kind(mode); got != want {
			t.Errorf("Kind(%v) = %q, want %q", mode, got, want)
		}
	}
}
