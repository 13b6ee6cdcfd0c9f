package safefile

import (
	"os"
	"syscall"

	"github.com/pkg/errors"
)

// ErrLink is wrapped by the error for a path OpenForWrite or OpenOwn
// refuses because it is a symbolic link.
var ErrLink = errors.New("a symbolic link")

// OpenForWrite opens path with flag (os.O_WRONLY or os.O_RDWR, with
// O_CREATE, O_APPEND, ... as needed) without following a symbolic link:
// a link planted at path, dangling or not, is refused ("PATH is a symbolic
// link; refusing to write through it"), so nothing is written to, or
// created at, its target. Anything else that is not a regular file is
// refused as OpenRegular refuses it. The open does not block.
func OpenForWrite(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errors.WithStack(linkError{path, "write"})
	}
	if err != nil {
		return nil, err
	}
	return regularOnly(f, path)
}

// linkError refuses a symbolic link at path; op is what was refused
// through it: read or write.
type linkError struct{ path, op string }

func (e linkError) Error() string {
	advice := "remove it and run again" // a file about to be written anew
	if e.op == "read" {
		advice = "put the file itself in its place" // the file is needed: removing the link loses it
	}
	return e.path + " is a symbolic link; refusing to " + e.op + " through it (" + advice + ")"
}
func (e linkError) Is(target error) bool { return target == ErrLink }
