//go:build !unix

package rundir

import "github.com/pkg/errors"

// ErrInUse is returned (wrapped) by Lock when another process holds the lock.
var ErrInUse = errors.New("in use")

// Lock is the hold of one process on a run directory. Without flock (not a
// Unix system) it holds nothing: one writer per run is then up to the user.
type Lock struct{}

// Acquire returns a Lock that holds nothing (see Lock).
func Acquire(dir string) (*Lock, error) { return &Lock{}, nil }

// Release does nothing.
func (l *Lock) Release() error { return nil }
