package safefile

import (
	"io"
	"os"
	"path/filepath"

	"github.com/pkg/errors"
)

// Guard refuses an output path for a reason of the caller's; exists says
// whether something is at path. rundir.RefuseRunFile is one: a run's file.
type Guard func(path string, exists bool) error

// WriteOutput writes an output file of a command (inspect -png, -dot, ...)
// at path with what write produces, after CheckOutput, atomically: write
// goes to a temporary file beside path, renamed over it only once complete
// (WriteFileAtomic), so a failure leaves whatever was there. inputs are the
// files the command reads or may read (open.Opened.Inputs: the model's
// every file, read or looked for); guard, when not nil, is the caller's
// own rule.
func WriteOutput(path string, inputs []string, guard Guard, write func(io.Writer) error) error {
	if err := CheckOutput(path, inputs, guard); err != nil {
		return err
	}
	return WriteFileAtomic(path, write)
}

// CheckOutput is the one rule for every output file of every command: an
// output path is never an input. It refuses a path that would replace
// something it must not: an existing path that is not a regular file (a
// symlink, a named pipe, a device, a directory), one of inputs, or what
// guard refuses (the commands pass rundir.RefuseRunFile: a run's file). An
// input is matched by identity (device and inode, so another spelling or a
// hard link of it counts) and, whether it exists or not, by its name in its
// directory (the directory by identity): a file the command looks for but
// did not find this time (a model's tokenizer.json) is still never made by
// an output. Each refusal is one line naming the path and the reason.
func CheckOutput(path string, inputs []string, guard Guard) error {
	info, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		info = nil
	} else if err != nil {
		return errors.Wrapf(err, "output %s", path)
	} else if !info.Mode().IsRegular() {
		return errors.Errorf("refusing to write %s: it is %s, not a regular file", path, Kind(info.Mode()))
	}
	if err := checkNotInput(path, info, inputs); err != nil {
		return err
	}
	if guard != nil {
		return guard(path, info != nil)
	}
	return nil
}

// checkNotInput refuses path (info is its Lstat, nil when it does not
// exist) when it is one of inputs, by identity or by its directory and
// name.
func checkNotInput(path string, info os.FileInfo, inputs []string) error {
	dir, dirErr := os.Stat(inDir(path))
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if info != nil {
			if inInfo, err := os.Stat(in); err == nil && os.SameFile(info, inInfo) {
				return errors.Errorf("refusing to write %s: it is the input %s", path, in)
			}
		}
		if dirErr == nil && filepath.Base(filepath.Clean(in)) == filepath.Base(filepath.Clean(path)) {
			if parent, err := os.Stat(inDir(in)); err == nil && os.SameFile(dir, parent) {
				if info != nil {
					return errors.Errorf("refusing to write %s: it is the input %s", path, in)
				}
				return errors.Errorf("refusing to write %s: it is an input (read from there when it exists)", path)
			}
		}
	}
	return nil
}

// inDir is path's directory, "." for a bare name.
func inDir(path string) string {
	return filepath.Dir(filepath.Clean(path))
}
