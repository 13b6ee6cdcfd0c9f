package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/rundir"
)

// resumeFlag is -resume: a switch (-resume with -run DIR, or with the run
// directory as the argument, which keeps "-resume DIR" working) that also
// takes the directory as its value (-resume=DIR).
type resumeFlag struct {
	on  bool
	dir string
}

func (r *resumeFlag) IsBoolFlag() bool { return true }

func (r *resumeFlag) String() string {
	if r == nil || r.dir == "" {
		return ""
	}
	return r.dir
}

func (r *resumeFlag) Set(v string) error {
	if b, err := strconv.ParseBool(v); err == nil {
		r.on = b
		return nil
	}
	r.on, r.dir = true, v
	return nil
}

// runDirectory is the run directory the flags name: -run DIR, -resume=DIR or
// the argument, which only -resume takes; "" when none does. Two that
// differ are refused.
func runDirectory(flags *flag.FlagSet, args []string, runFlag string, resume resumeFlag, arg string) (string, error) {
	if arg != "" && !resume.on {
		return "", cli.Unexpected(flags, args, []string{arg}, "flags only: a new run's directory is -run DIR, a run to continue -resume DIR")
	}
	named := arg
	if resume.dir != "" {
		if arg != "" && filepath.Clean(arg) != filepath.Clean(resume.dir) {
			return "", errors.Errorf("-resume=%s and the argument %s name different directories; give one", resume.dir, arg)
		}
		named = resume.dir
	}
	if runFlag != "" && named != "" && filepath.Clean(runFlag) != filepath.Clean(named) {
		return "", errors.Errorf("-run %s and -resume %s name different directories; -resume continues the run in -run DIR", runFlag, named)
	}
	if named != "" {
		return named, nil
	}
	return runFlag, nil
}

// moveAside is -fresh: when dir holds a run, it renames dir to the first
// free dir.old-N, so that a new run starts in dir while the old one is kept
// whole, and returns where it went ("" when dir held no run). A run being
// written is refused (its lock is held), as it would be without -fresh.
func moveAside(dir string) (string, error) {
	held, err := rundir.HoldsRun(dir)
	if err != nil || !held {
		return "", err
	}
	lock, err := rundir.Acquire(dir)
	if err != nil {
		return "", err
	}
	if err := lock.Release(); err != nil {
		return "", err
	}
	for n := 1; ; n++ {
		aside := fmt.Sprintf("%s.old-%d", filepath.Clean(dir), n)
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			return aside, errors.Wrap(os.Rename(dir, aside), "-fresh: moving the old run aside")
		}
	}
}
