package safefile

import (
	"os"
	"path/filepath"

	"github.com/pkg/errors"
)

// CheckNewDir refuses dir as the target of WriteDirAtomic: an existing
// path that is not a directory (a symlink to one included, whose
// replacement would not be the directory named), or a directory that is
// not empty, whose files writing it would lose; and a dir whose parent
// does not exist. Each refusal is one line naming dir.
func CheckNewDir(dir string) error {
	info, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		parent := filepath.Dir(filepath.Clean(dir))
		if st, err := os.Stat(parent); err != nil || !st.IsDir() {
			return errors.Errorf("refusing to write %s: its parent %s is not a directory that exists", dir, parent)
		}
		return nil
	case err != nil:
		return errors.Wrapf(unwrapPath(err), "output %s", dir)
	case !info.IsDir():
		return errors.Errorf("refusing to write %s: it is %s, not a directory", dir, Kind(info.Mode()))
	}
	d, err := os.Open(dir)
	if err != nil {
		return errors.Wrapf(unwrapPath(err), "output %s", dir)
	}
	defer d.Close()
	if names, _ := d.Readdirnames(1); len(names) > 0 {
		return errors.Errorf("refusing to write %s: it is a directory that is not empty (it holds %s); name a new or empty one", dir, names[0])
	}
	return nil
}

// WriteDirAtomic creates the directory dir with the files write puts in
// the temporary directory it is given, all at once: tmp is a new
// directory beside dir (".<base>.tmp-<digits>"), renamed to dir only once
// write has succeeded, so a reader (or a crash) sees no directory, or the
// empty one there was, or the complete new one. dir must pass
// CheckNewDir; a directory that gains a file meanwhile is not replaced.
// On any error tmp is
// removed with everything in it. The directory gets mode 0755, as
// WriteFileAtomic gives a new file 0644.
func WriteDirAtomic(dir string, write func(tmp string) error) error {
	if err := CheckNewDir(dir); err != nil {
		return err
	}
	parent, base := filepath.Split(filepath.Clean(dir))
	if parent == "" {
		parent = "."
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-*")
	if err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s: creating temporary directory", dir)
	}
	done := false
	defer func() {
		if !done {
			_ = os.RemoveAll(tmp) // best effort: the error that stopped the write is the one to report
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s: setting permissions", dir)
	}
	// os.Rename refuses to replace a directory, even an empty one: the
	// empty one goes first. Remove refuses one that gained a file, and
	// Rename a dir made again meanwhile, so nothing is lost either way.
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return errors.Wrapf(unwrapPath(err), "write %s: replacing the empty directory", dir)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s: rename", dir)
	}
	done = true
	return syncDir(parent, dir)
}

// syncDir makes a rename in dir durable; path names the output in errors.
func syncDir(dir, path string) error {
	d, err := os.Open(dir)
	if err != nil {
		return errors.Wrapf(unwrapPath(err), "write %s: opening directory to fsync", path)
	}
	defer d.Close()
	return errors.Wrapf(d.Sync(), "write %s: fsync directory", path)
}
