package safefile

import (
	"io"

	"github.com/pkg/errors"
)

// Sized is the content of a file its caller opened, of a size known before
// it is read: a HashedFile, an io.SectionReader. A reader that takes one in
// place of a path parses the very bytes its caller hashes or checks, with
// no second opening by path between the two.
type Sized interface {
	io.Reader
	Size() int64
}

// ReadSized reads r whole, as ReadLimit reads the file at path: one of more
// than limit bytes is refused from its size before anything is read, and
// no more than its size is read.
func ReadSized(r Sized, path string, limit int64, what string) ([]byte, error) {
	lr, err := LimitSized(r, path, limit, what)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(lr)
	if err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "%s", path)
	}
	return raw, nil
}

// LimitSized is r for a reader that decodes as it reads (OpenLimit's
// bound): refused from its size when that passes limit, and read no
// further than its size.
func LimitSized(r Sized, path string, limit int64, what string) (io.Reader, error) {
	if r.Size() > limit {
		return nil, tooLarge(path, r.Size(), limit, what)
	}
	return io.LimitReader(r, r.Size()), nil
}
