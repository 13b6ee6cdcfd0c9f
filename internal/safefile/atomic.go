package safefile

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pkg/errors"
)

// WriteFileAtomic replaces the file at path with what write produces: it
// writes to a temporary file in the same directory, syncs and closes it,
// renames it over path and syncs the directory, so a reader (or a crash) sees
// either the old file or the complete new one. On any error, including a
// panic in write, the temporary file is removed and the old file is left as
// it was. The new file gets the old file's permissions, or 0644.
//
// The temporary file is named ".<base>.tmp-<digits>" beside the target, so
// that a caller can recognise and remove one left by a process killed
// mid-write.
//
// It is not specific to safetensors: any file that must never be seen half
// written (optimizer state, logs rewritten whole) can use it.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	return WriteFileAtomicAt(path, func(w Writer) error { return write(w) })
}

// Writer is the file WriteFileAtomicAt hands its caller: written in order,
// buffered, and able to patch bytes already written (a digest that goes in
// a header but is known only at the end).
type Writer interface {
	io.Writer
	io.WriterAt
}

// WriteFileAtomicAt is WriteFileAtomic for a writer that patches what it
// wrote (WriteAt), so that a file sealed by a digest of its contents is
// written in one pass.
func WriteFileAtomicAt(path string, write func(Writer) error) error {
	staged, err := Stage(path, write)
	if err != nil {
		return err
	}
	return staged.Commit()
}

// Staged is a file written whole, synced and closed under a temporary name
// beside its path (".<base>.tmp-<digits>"), not yet in place: Commit renames
// it there, LinkAs gives its bytes a second name first, Discard removes it.
type Staged struct {
	path, tmp string
}

// Stage writes what write produces to a temporary file beside path and
// syncs it; the file at path is untouched. On any error, including a panic
// in write, the temporary file is removed. The new file gets the old file's
// permissions, or 0644.
func Stage(path string, write func(Writer) error) (*Staged, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	mode := os.FileMode(0o644)
	if info, statErr := os.Stat(path); statErr == nil {
		if !info.Mode().IsRegular() {
			return nil, errors.Errorf("write %s: not a regular file", path)
		}
		mode = info.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "write %s: creating temporary file", path)
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			// Best effort: the write already failed, and that error is the one to report.
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	fw := &fileWriter{f: f}
	w := &bufferedFile{Writer: bufio.NewWriterSize(fw, 1<<16), fw: fw}
	if err := write(w); err != nil {
		if fw.err != nil {
			err = fw.err
		}
		return nil, errors.Wrapf(unwrapPath(err), "write %s", path)
	}
	if err := w.Flush(); err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "write %s", path)
	}
	if err := f.Chmod(mode); err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "write %s: setting permissions", path)
	}
	if err := f.Sync(); err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "write %s: fsync", path)
	}
	if err := f.Close(); err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "write %s: close", path)
	}
	done = true
	return &Staged{path: path, tmp: tmp}, nil
}

// Commit renames the staged file over its path and syncs the directory: a
// reader (or a crash) sees the old file or the complete new one.
func (s *Staged) Commit() error {
	if err := os.Rename(s.tmp, s.path); err != nil {
		_ = os.Remove(s.tmp)
		return errors.Wrapf(unwrapPath(err), "write %s: rename", s.path)
	}
	return syncDir(filepath.Dir(s.path), s.path)
}

// LinkAs makes other a second name of the staged bytes (a hard link, no
// copy), replacing any file there atomically: the link is made under a
// temporary name beside other and renamed over it. Both names then share
// one inode, which stays intact: every writer of this package replaces a
// file by rename and never writes into one in place.
func (s *Staged) LinkAs(other string) error {
	dir, base := filepath.Split(other)
	if dir == "" {
		dir = "."
	}
	if info, err := os.Lstat(other); err == nil && !info.Mode().IsRegular() {
		return errors.Errorf("write %s: not a regular file", other)
	}
	tmp := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.Link(s.tmp, tmp); err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s: linking", other)
	}
	if err := os.Rename(tmp, other); err != nil {
		_ = os.Remove(tmp)
		return errors.Wrapf(unwrapPath(err), "write %s: rename", other)
	}
	return syncDir(dir, other)
}

// Discard removes the staged file, leaving its path as it was.
func (s *Staged) Discard() {
	// Best effort: the caller is already reporting why it gave up.
	_ = os.Remove(s.tmp)
}

// bufferedFile is the Writer of Stage: a buffer over the temporary file,
// flushed before a patch so that WriteAt lands on bytes already in the file.
type bufferedFile struct {
	*bufio.Writer
	fw *fileWriter
}

func (b *bufferedFile) WriteAt(p []byte, off int64) (int, error) {
	if err := b.Flush(); err != nil {
		return 0, err
	}
	n, err := b.fw.f.WriteAt(p, off)
	if err != nil && b.fw.err == nil {
		b.fw.err = unwrapPath(err)
	}
	return n, err
}

// fileWriter remembers the first error writing the temporary file. A full
// disk then reads "write <path>: write: no space left on device" rather than
// naming the temporary file and whichever encoder layer the error passed.
type fileWriter struct {
	f   *os.File
	err error
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil && w.err == nil {
		w.err = unwrapPath(err)
	}
	return n, err
}
