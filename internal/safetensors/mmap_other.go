//go:build !unix

package safetensors

import (
	"os"

	"github.com/pkg/errors"
)

// CanMap reports whether File.Map maps files on this platform.
const CanMap = false

func mapFile(*os.File, int64) ([]byte, error) {
	return nil, errors.New("mapping a file is not built on this platform")
}

func unmap([]byte) error { return nil }
