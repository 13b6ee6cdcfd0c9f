//go:build unix

package rundir

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/safefile"
)

// ErrInUse is returned (wrapped) by Lock when another process holds the lock.
var ErrInUse = errors.New("in use")

// Lock is the exclusive hold of one process on a run directory.
type Lock struct {
	f    *os.File
	path string
}

// Acquire takes the lock of the existing directory dir without waiting: if
// another process holds it, the error wraps ErrInUse and reads "run directory
// DIR is in use by pid N". The lock lasts until Release or the end of the
// process, whichever comes first.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, LockFile)
	for {
		// Never through a link: a planted DIR/train.lock -> ~/file would get
		// our pid written into its target.
		f, err := safefile.OpenForWrite(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, errors.Wrap(err, "locking the run directory")
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, errors.Wrap(err, "locking the run directory")
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, errors.WithStack(inUseError{dir: dir, holder: holderOf(path)})
			}
			return nil, errors.Wrapf(err, "locking the run directory %s", dir)
		}
		// A holder that was removing the directory may have unlinked the
		// file between our open and our flock: then the lock is on a file
		// nobody else will open, so take it again on the current one.
		now, err := os.Stat(path)
		if err != nil || !os.SameFile(info, now) {
			f.Close()
			continue
		}
		if err := f.Truncate(0); err == nil {
			_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		if err != nil {
			f.Close()
			return nil, errors.Wrapf(err, "writing %s", path)
		}
		return &Lock{f: f, path: path}, nil
	}
}

// inUseError is the refusal of a second writer.
type inUseError struct{ dir, holder string }

func (e inUseError) Error() string        { return "run directory " + e.dir + " is in use by " + e.holder }
func (e inUseError) Is(target error) bool { return target == ErrInUse }

// holderOf reads the holder's pid from the lock file at path, "pid N". The
// file is empty for the moment between the holder's flock and its write, so
// an empty one is read again for up to about 50 ms before settling for
// "another process".
func holderOf(path string) string {
	for range 50 {
		content, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(content))); perr == nil && pid > 0 {
			return "pid " + strconv.Itoa(pid)
		}
		if err != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return "another process"
}

// Release removes the lock file, so a finished run leaves none behind, and
// drops the lock. A process that opened the file just before its removal
// finds, once it gets the lock, that the name no longer leads to its file,
// and takes the lock again on a new one (see Acquire).
func (l *Lock) Release() error {
	removeErr := os.Remove(l.path)
	if err := l.f.Close(); err != nil {
		return errors.Wrap(err, "releasing the run directory lock")
	}
	return errors.Wrap(removeErr, "releasing the run directory lock")
}
