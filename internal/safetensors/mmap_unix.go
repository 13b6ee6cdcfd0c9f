//go:build unix

package safetensors

import (
	"os"

	"github.com/pkg/errors"
	"golang.org/x/sys/unix"
)

// CanMap reports whether File.Map maps files on this platform.
const CanMap = true

// mapFile maps the first size bytes of f read-only, shared with the page
// cache.
func mapFile(f *os.File, size int64) ([]byte, error) {
	all, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	return all, errors.Wrap(err, "mmap")
}

// unmap undoes mapFile.
func unmap(all []byte) error { return errors.Wrap(unix.Munmap(all), "munmap") }
