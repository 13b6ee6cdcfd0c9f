package safefile

import (
	"bufio"
	"io"
	"os"
	"path/filepath"

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
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	mode := os.FileMode(0o644)
	if info, statErr := os.Stat(path); statErr == nil {
		if !info.Mode().IsRegular() {
			return errors.Errorf("write %s: not a regular file", path)
		}
		mode = info.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s: creating temporary file", path)
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
	bw := bufio.NewWriterSize(fw, 1<<16)
	if err := write(bw); err != nil {
		if fw.err != nil {
			err = fw.err
		}
		return errors.Wrapf(unwrapPath(err), "write %s", path)
	}
	if err := bw.Flush(); err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s", path)
	}
	if err := f.Chmod(mode); err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s: setting permissions", path)
	}
	if err := f.Sync(); err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s: fsync", path)
	}
	if err := f.Close(); err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s: close", path)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s: rename", path)
	}
	done = true
	// The rename is durable only once the directory entry is synced.
	d, err := os.Open(dir)
	if err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s: opening directory to fsync", path)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s: fsync directory", path)
	}
	return nil
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
