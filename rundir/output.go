package rundir

import (
	"io"
	"os"
	"path/filepath"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/safefile"
)

// WriteOutput writes an output file of a command (inspect -png, -dot, ...)
// at path with what write produces, after CheckOutput, atomically: write
// goes to a temporary file beside path, renamed over it only once complete
// (safefile.WriteFileAtomic), so a failure leaves whatever was there.
// inputs are the files the command read (e.g. the checkpoint).
func WriteOutput(path string, inputs []string, write func(io.Writer) error) error {
	if err := CheckOutput(path, inputs); err != nil {
		return err
	}
	return safefile.WriteFileAtomic(path, write)
}

// CheckOutput refuses an output path that would replace something it must
// not: an existing path that is not a regular file (a symlink, a named pipe,
// a device, a directory), one of inputs (by identity, so another spelling or
// a hard link of it counts), or a run file (IsRunFile) in a directory that
// holds a run. Each refusal is one line naming the path and the reason.
func CheckOutput(path string, inputs []string) error {
	info, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		info = nil
	} else if err != nil {
		return errors.Wrapf(err, "output %s", path)
	} else if !info.Mode().IsRegular() {
		return errors.Errorf("refusing to write %s: it is %s, not a regular file", path, safefile.Kind(info.Mode()))
	}
	if info != nil {
		for _, in := range inputs {
			if inInfo, err := os.Stat(in); err == nil && os.SameFile(info, inInfo) {
				return errors.Errorf("refusing to write %s: it is the input %s", path, in)
			}
		}
	}
	if name := filepath.Base(path); IsRunFile(name) {
		held, err := HoldsRun(inDir(path))
		if err != nil {
			return errors.Wrapf(err, "output %s", path)
		}
		if held || info != nil {
			return errors.Errorf("refusing to write %s: %s is a file of a training run", path, name)
		}
	}
	return nil
}
