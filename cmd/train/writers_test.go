package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
	"github.com/attnscope/attnscope/train"
)

// runFiles are the files of a finished tiny run that must come from one run.
var runFiles = []string{rundir.ConfigFile, runlog.MetricsFile, rundir.CheckpointFile, rundir.BestFile}

// soloRun is the run directory tinyYAML with seed leaves when trained alone.
func soloRun(t *testing.T, seed int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "solo")
	if _, _, err := runCmd("-config", writeConfig(t, tinyYAML), "-set", "seed="+strconv.Itoa(seed), "-run", dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOneWriterPerRun: while a run is being written, a second train into the
// same directory (fresh, -resume, or -fresh, which would move it aside)
// exits at once with "run directory X is in use by pid N" and writes
// nothing; the directory ends byte-identical to
// the first run trained alone. Then two trains started together, fresh and
// -resume: exactly one writes, the other is refused, and the directory equals
// the winner's run alone, never a mixture.
func TestOneWriterPerRun(t *testing.T) {
	soloA, soloB := soloRun(t, 3), soloRun(t, 4)
	inUse := "is in use by pid " + strconv.Itoa(os.Getpid())

	// Deterministic overlap: the second train runs while the first is
	// stopped in its observer at step 2, holding the directory.
	dir := filepath.Join(t.TempDir(), "run")
	cfgA, err := rundir.ParseConfig("tiny.yaml", []byte(tinyYAML), []string{"seed=3"})
	if err != nil {
		t.Fatal(err)
	}
	var secondErrs []error
	_, err = train.Run(context.Background(), cfgA, train.Options{Dir: dir, Observer: func(e train.Event) {
		if e.Step != 2 {
			return
		}
		_, _, err := runCmd("-config", writeConfig(t, tinyYAML), "-set", "seed=4", "-run", dir)
		secondErrs = append(secondErrs, err)
		_, _, err = runCmd("-resume", dir)
		secondErrs = append(secondErrs, err)
		_, _, err = runCmd("-config", writeConfig(t, tinyYAML), "-set", "seed=4", "-run", dir, "-fresh")
		secondErrs = append(secondErrs, err)
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range secondErrs {
		if want := "run directory " + dir + " " + inUse; err == nil || err.Error() != want {
			t.Errorf("second train %d while the first runs: %v, want %s", i, err, want)
		}
	}
	sameFiles(t, soloA, dir, runFiles...)
	checkRunFiles(t, dir, 40)

	// Two at once, for real: whichever gets the directory first writes it.
	for trial := range 3 {
		dir := filepath.Join(t.TempDir(), "race")
		errs := make([]error, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, seed := range []string{"seed=3", "seed=4"} {
			cfg := writeConfig(t, tinyYAML)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, _, errs[i] = runCmd("-config", cfg, "-set", seed, "-run", dir)
			}()
		}
		close(start)
		wg.Wait()
		winner := oneWinner(t, trial, errs, dir)
		sameFiles(t, []string{soloA, soloB}[winner], dir, runFiles...)
		checkRunFiles(t, dir, 40)
	}

	// Two -resume of one stopped run at once: one continues it, the other
	// is refused (or finds it complete), and the metrics hold each line once.
	for trial := range 3 {
		dir := copyDir(t, stoppedRun(t, tinyYAML, 7))
		errs := make([]error, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, _, errs[i] = runCmd("-resume", dir)
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil && !strings.Contains(err.Error(), inUse) {
				t.Errorf("resume trial %d, train %d: %v", trial, i, err)
			}
		}
		if errs[0] != nil && errs[1] != nil {
			t.Errorf("resume trial %d: both refused", trial)
		}
		sameFiles(t, soloA, dir, runFiles...)
		checkRunFiles(t, dir, 40)
	}
}

// oneWinner checks that exactly one of two fresh trains into dir succeeded
// and that the other was refused as a second writer, and returns the index
// of the one that wrote.
func oneWinner(t *testing.T, trial int, errs []error, dir string) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Fatalf("trial %d: both trains into %s exited 0", trial, dir)
		case !strings.Contains(err.Error(), "run directory "+dir+" is in use by pid") && !strings.Contains(err.Error(), "already holds a run"):
			t.Errorf("trial %d, train %d: %v, want in use or already holds a run", trial, i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("trial %d: neither train wrote %s: %v", trial, dir, errs)
	}
	return winner
}
