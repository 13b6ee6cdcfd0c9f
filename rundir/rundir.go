package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/runlog"
)

// Files of a run directory.
const (
	ConfigFile     = "config.yaml"            // the resolved config
	CheckpointFile = "checkpoint.safetensors" // the latest weights, with the run config and step
	BestFile       = "best.safetensors"       // the weights of the lowest eval_loss so far
	LockFile       = "train.lock"             // flocked by the process writing the run
)

// StateFile is the name of the optimizer state saved with the checkpoint of
// step (checkpoint.OptimizerState). The step in the name is what pairs the two files: a
// run writes state-<step> before checkpoint.safetensors of that step and
// deletes older state files only afterwards, so whatever moment a run is
// killed at, the state file of the checkpoint's step exists.
func StateFile(step int) string { return fmt.Sprintf("state-%d.safetensors", step) }

// StatePattern matches StateFile names; its group is the step.
var StatePattern = regexp.MustCompile(`^state-([0-9]+)\.safetensors$`)

// TemporaryPattern matches the temporary files safefile.WriteFileAtomic
// leaves behind when the process dies before its rename.
var TemporaryPattern = regexp.MustCompile(`^\..+\.tmp-[0-9]+$`)

// dataFiles are the names whose presence means a directory holds a run:
// its config, its logs (package runlog) and its checkpoints.
var dataFiles = []string{ConfigFile, runlog.MetricsFile, runlog.RolesFile, runlog.CircuitsFile, CheckpointFile, BestFile}

// IsRunFile reports whether name (a base name) is one a run directory uses.
func IsRunFile(name string) bool {
	for _, f := range dataFiles {
		if name == f {
			return true
		}
	}
	return name == LockFile || initfrom.IsCopy(name) || StatePattern.MatchString(name) || TemporaryPattern.MatchString(name)
}

// runEntries lists dir; a missing dir has no entries.
func runEntries(dir string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return entries, errors.Wrap(err, "reading the run directory")
}

// HoldsRun reports whether dir has any of a run's data files (the lock file
// alone, left by a run that failed before writing anything, does not count).
// A missing dir holds no run.
func HoldsRun(dir string) (bool, error) {
	entries, err := runEntries(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if name := e.Name(); name != LockFile && !TemporaryPattern.MatchString(name) && IsRunFile(name) {
			return true, nil
		}
	}
	return false, nil
}

// shownForeign is how many of a directory's foreign entries a ForeignError
// names: enough to recognise the directory, few enough for one line.
const shownForeign = 3

// ForeignError is the refusal of a directory for a new run because it holds
// entries that are not a run's files (IsRunFile): a run written there would
// mix its files with a user's.
type ForeignError struct {
	Dir   string
	Shown []string // the first entries that are not run files, by name
	Count int      // how many entries are not run files
}

func (e *ForeignError) Error() string { return "run directory " + e.Dir + ": " + e.Problem() }

// Problem is the refusal without the directory, for a caller that names it
// its own way (cmd/train names the -run flag). Each name is quoted and
// escaped, so a hostile file name cannot drive the terminal.
func (e *ForeignError) Problem() string {
	quoted := make([]string, len(e.Shown))
	for i, name := range e.Shown {
		quoted[i] = msg.Quote(name)
	}
	list := strings.Join(quoted, ", ")
	if more := e.Count - len(e.Shown); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return "the directory exists and holds files that are not a run's (" + list + "); give a new or empty directory"
}

// CheckOnlyRunFiles refuses, with a *ForeignError, a directory for a new run
// that holds anything but a run's files. A missing dir is fine, and so is one
// holding only a stale lock or the temporaries of an interrupted write: it
// counts as empty.
func CheckOnlyRunFiles(dir string) error {
	entries, err := runEntries(dir)
	if err != nil {
		return err
	}
	foreign := &ForeignError{Dir: dir}
	for _, e := range entries {
		if IsRunFile(e.Name()) {
			continue
		}
		if foreign.Count < shownForeign {
			foreign.Shown = append(foreign.Shown, e.Name())
		}
		foreign.Count++
	}
	if foreign.Count > 0 {
		return errors.WithStack(foreign)
	}
	return nil
}

// CheckNoLinks refuses a run directory any of whose run files is a
// symbolic link, naming it: a run reads and writes only its own files, never
// through a link planted among them. A missing dir is fine.
func CheckNoLinks(dir string) error {
	entries, err := runEntries(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 && IsRunFile(e.Name()) {
			return errors.Errorf("%s is a symbolic link; a run's files are never read or written through a link (remove it and run again)", filepath.Join(dir, e.Name()))
		}
	}
	return nil
}

// CheckDir refuses a run directory path that cannot be one: a dangling
// symlink (MkdirAll would only say "file exists") or something that is not
// a directory. A missing path is fine.
func CheckDir(dir string) error {
	info, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errors.Wrap(err, "reading the run directory")
	}
	if info.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(dir)
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return errors.Errorf("run directory %s is a dangling symlink (to %s, which does not exist)", dir, msg.Clean(target))
		}
		info, err = os.Stat(dir)
		if err != nil {
			return errors.Wrapf(err, "run directory %s", dir)
		}
	}
	if !info.IsDir() {
		return errors.Errorf("run directory %s exists and is not a directory", dir)
	}
	return nil
}

// RefuseRunFile refuses an output path that is a run's file (IsRunFile) in a
// directory that holds a run, or that exists: the rule a command passes to
// safefile.WriteOutput, beside its inputs, so that no output replaces or
// adds a file of a run.
func RefuseRunFile(path string, exists bool) error {
	name := filepath.Base(path)
	if !IsRunFile(name) {
		return nil
	}
	held, err := HoldsRun(filepath.Dir(filepath.Clean(path)))
	if err != nil {
		return errors.Wrapf(err, "output %s", path)
	}
	if held || exists {
		return errors.Errorf("refusing to write %s: %s is a file of a training run", path, name)
	}
	return nil
}
