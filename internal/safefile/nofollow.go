package safefile

import (
	"os"
	"syscall"

	"github.com/pkg/errors"
)

// ReadLimitNoFollow is ReadLimit for a file that must not be reached
// through a symbolic link (a file found beside another, which a link could
// make any file on the system): a link at path, dangling or not, is refused
// without its target being opened (errors.Is(err, ErrLink) holds). The
// link is refused by the open itself (O_NOFOLLOW), so a link swapped in
// after a check cannot slip through.
func ReadLimitNoFollow(path string, limit int64, what string) ([]byte, error) {
	return readLimit(openNoFollow, path, limit, what)
}

// openNoFollow is OpenRegular without following a link at path.
func openNoFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errors.WithStack(readLinkError{})
	}
	if err != nil {
		return nil, err
	}
	return regularOnly(f, path)
}

// readLinkError is the refusal of a link; ReadLimitNoFollow names the path.
type readLinkError struct{}

func (readLinkError) Error() string {
	return "is a symbolic link, which is not followed"
}
func (readLinkError) Is(target error) bool { return target == ErrLink }
