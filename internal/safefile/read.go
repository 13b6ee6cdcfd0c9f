package safefile

import (
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/pkg/errors"
)

// ErrNotRegular is wrapped by the error for a path that must be a regular
// file and is not.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path for reading if it is a regular file (after
// following symlinks). Anything else is refused with an *os.PathError whose
// message says what the path is ("open PATH: is a named pipe, not a regular
// file"; errors.Is(err, ErrNotRegular) holds). The open does not block: it
// asks for O_NONBLOCK, which a regular file ignores, so a named pipe without
// a writer is refused rather than waited on; the type is checked on the
// opened file, so a path swapped between a check and the open cannot slip
// through. Errors from the file system are returned as os gives them.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return regularOnly(f, path)
}

// OpenOwn opens path for reading as OpenRegular does, but never through a
// symbolic link: a link at path, dangling or not, is refused with an error
// wrapping ErrLink ("PATH is a symbolic link; refusing to read through it
// (put the file itself in its place)"), the rule for the files of a run directory.
// The open itself refuses it (O_NOFOLLOW), so a link swapped in after a
// check is refused too.
func OpenOwn(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errors.WithStack(linkError{path, "read"})
	}
	if err != nil {
		return nil, err
	}
	return regularOnly(f, path)
}

// regularOnly returns f when the file it opened is a regular file; else it
// closes f and says what the path is.
func regularOnly(f *os.File, path string) (*os.File, error) {
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: notRegular{Kind(info.Mode())}}
	}
	return f, nil
}

// notRegular says what a path is instead of a regular file.
type notRegular struct{ kind string }

func (e notRegular) Error() string        { return "is " + e.kind + ", not a regular file" }
func (e notRegular) Is(target error) bool { return target == ErrNotRegular }

// Kind names the type of a file mode for a message: "a directory", "a named
// pipe", "a device", "a socket", "a symlink", "a regular file".
func Kind(mode fs.FileMode) string {
	t := mode.Type()
	if t == 0 {
		return "a regular file"
	}
	for _, k := range fileKinds {
		if t&k.bit != 0 {
			return k.name
		}
	}
	return "not a regular file (" + t.String() + ")"
}

// fileKinds are the names of the mode bits Kind knows, in the order it tries
// them: a character device has ModeDevice set too.
var fileKinds = []struct {
	bit  fs.FileMode
	name string
}{
	{fs.ModeCharDevice, "a character device"},
	{fs.ModeDir, "a directory"},
	{fs.ModeNamedPipe, "a named pipe"},
	{fs.ModeSymlink, "a symlink"},
	{fs.ModeSocket, "a socket"},
	{fs.ModeDevice, "a device"},
}

// ReadLimit returns the contents of the regular file at path (see
// OpenRegular), refusing one of more than limit bytes before reading it.
// what names the limit in the error ("a run of 100 steps writes at most
// 25600 bytes of metrics"). It never reads more than limit+1 bytes, so a file
// that grows while it is read is refused too.
func ReadLimit(path string, limit int64, what string) ([]byte, error) {
	return readLimit(OpenRegular, path, limit, what)
}

// readLimit is ReadLimit with the file opened by open.
func readLimit(open func(string) (*os.File, error), path string, limit int64, what string) ([]byte, error) {
	f, err := open(path)
	if errors.Is(err, ErrLink) {
		return nil, err // it names the path
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, errors.Wrapf(err, "%s", path)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "%s", path)
	}
	if info.Size() > limit {
		return nil, tooLarge(path, info.Size(), limit, what)
	}
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "%s", path)
	}
	if int64(len(raw)) > limit {
		return nil, tooLarge(path, int64(len(raw)), limit, what)
	}
	return raw, nil
}

// OpenLimit opens the regular file at path to be read as a stream, with
// ReadLimit's bounds and messages: a file of more than limit bytes is
// refused from its size before anything is read, and reading one that has
// grown past limit since fails with the same message, so a reader that
// decodes as it reads stops where the file should have.
func OpenLimit(path string, limit int64, what string) (io.ReadCloser, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "%s", path)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, errors.Wrapf(unwrapPath(err), "%s", path)
	}
	if info.Size() > limit {
		f.Close()
		return nil, tooLarge(path, info.Size(), limit, what)
	}
	return &limitedFile{f: f, left: limit, path: path, limit: limit, what: what}, nil
}

// limitedFile reads a file up to limit bytes and fails past it.
type limitedFile struct {
	f           *os.File
	left, limit int64
	path, what  string
}

func (l *limitedFile) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, tooLarge(l.path, l.limit+1, l.limit, l.what)
	}
	n, err := l.f.Read(p[:min(int64(len(p)), l.left+1)])
	l.left -= int64(n)
	if l.left < 0 {
		return 0, tooLarge(l.path, l.limit+1, l.limit, l.what)
	}
	if err != nil && err != io.EOF {
		err = errors.Wrapf(unwrapPath(err), "%s", l.path)
	}
	return n, err
}

func (l *limitedFile) Close() error { return l.f.Close() }

func tooLarge(path string, size, limit int64, what string) error {
	return errors.Errorf("%s is %d bytes, more than the %d bytes %s", path, size, limit, what)
}

// unwrapPath drops the *os.PathError around err so a message names the path
// once; errors.Is(err, fs.ErrNotExist) still holds.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return errors.WithMessage(pe.Err, pe.Op)
	}
	return err
}
