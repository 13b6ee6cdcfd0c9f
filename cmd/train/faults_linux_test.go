package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// fsizeEnv makes the test binary, started as the train command, run under
// RLIMIT_FSIZE of that many bytes: writes past it fail with EFBIG, as on a
// full disk, whoever the user is (chmod does not stop root, a file size
// limit does). Go ignores the SIGXFSZ the kernel also sends.
const fsizeEnv = "ATTNSCOPE_TRAIN_FSIZE"

func init() {
	if v := os.Getenv(fsizeEnv); v != "" && os.Getenv("ATTNSCOPE_TRAIN_MAIN") == "1" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err == nil {
			err = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n})
		}
		if err != nil {
			panic(err)
		}
	}
}

// temporary matches the files safefile.WriteFileAtomic writes before its
// rename: ".<name>.tmp-<digits>".
var temporary = regexp.MustCompile(`^\.(.+)\.tmp-[0-9]+$`)

// temporaries lists the temporary files in dir by the file they replace.
func temporaries(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if m := temporary.FindStringSubmatch(e.Name()); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// watch reports the files created in dir ("create:NAME") and renamed into
// it ("moved:NAME") as they happen, through inotify, so that a test can kill
// a process at the very start or end of a write.
func watch(t *testing.T, dir string) <-chan string {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CREATE|syscall.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	// A non-blocking descriptor goes through Go's poller, so Close ends the
	// pending Read.
	f := os.NewFile(uintptr(fd), "inotify")
	t.Cleanup(func() { f.Close() })
	events := make(chan string, 4096)
	go func() {
		defer close(events)
		buf := make([]byte, 64<<10)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				mask := binary.NativeEndian.Uint32(buf[off+4:])
				size := int(binary.NativeEndian.Uint32(buf[off+12:]))
				name := strings.TrimRight(string(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+size]), "\x00")
				kind := "create:"
				if mask&syscall.IN_MOVED_TO != 0 {
					kind = "moved:"
				}
				events <- kind + name
				off += syscall.SizeofInotifyEvent + size
			}
		}
	}()
	return events
}

// checkResumable requires what a kill must never break: a checkpoint that
// exists is complete (checkpoint.Load, which -resume and inspect use, accepts it)
// and has the optimizer state of its step beside it, and best.safetensors,
// if any, is complete too.
func checkResumable(t *testing.T, dir string, kill int) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, rundir.CheckpointFile)); err == nil {
		ck, err := checkpoint.Load(filepath.Join(dir, rundir.CheckpointFile))
		if err != nil {
			t.Fatalf("after kill %d the checkpoint is broken: %v", kill, err)
		}
		if _, _, err := safetensors.ReadFile(filepath.Join(dir, "state-"+strconv.Itoa(ck.Step)+".safetensors")); err != nil {
			t.Fatalf("after kill %d the checkpoint of step %d has no state: %v", kill, ck.Step, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.BestFile)); err == nil {
		if _, err := checkpoint.Load(filepath.Join(dir, rundir.BestFile)); err != nil {
			t.Fatalf("after kill %d best.safetensors is broken: %v", kill, err)
		}
	}
}

// killPoints are the moments TestKilledDuringWrites kills at: the k-th
// (1 <= k <= most) file event of a kind, or, for an empty event, a random
// delay after the process starts.
var killPoints = []struct {
	event string // prefix of a watch event
	most  int
}{
	{"create:.state-", 5},                      // writing an optimizer state
	{"moved:state-", 5},                        // state written, its checkpoint not yet
	{"create:.checkpoint.safetensors.tmp-", 5}, // writing the checkpoint
	{"moved:checkpoint.safetensors", 5},        // checkpoint written, older states not yet removed
	{"create:.best.safetensors.tmp-", 1},       // writing best.safetensors
	{"create:.metrics.jsonl.tmp-", 1},          // a resume truncating the metrics log
	{"", 0},
}

// TestKilledDuringWrites: with a checkpoint and its optimizer state written
// every step (and best.safetensors every few), the command is SIGKILLed
// inside each kind of write, between the writes of a checkpoint, and at
// random moments (killPoints), then continued with -resume (or -config while
// no run exists yet) until it finishes. After every kill the directory must
// hold only complete files that resume; the finished run must be
// byte-identical to an uninterrupted one (weights, best weights, config,
// metrics but for tokens_per_s) with no leftovers; and kills must have left
// temporary files of both checkpoints and states behind, proving they landed
// mid-write. Kills must also have left lock files behind, which the resumes
// met without being blocked (issue 11: a stale lock from a killed run must
// never block a resume).
func TestKilledDuringWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command in subprocesses")
	}
	yml := strings.NewReplacer("steps: 40", "steps: 60", "checkpoint_every: 5", "checkpoint_every: 1",
		"eval_every: 10", "eval_every: 4", "log_every: 5", "log_every: 1").Replace(tinyYAML)
	cfg := writeConfig(t, yml)
	want := filepath.Join(t.TempDir(), "want")
	if _, _, err := runCmd("-config", cfg, "-run", want); err != nil {
		t.Fatal(err)
	}
	// The directory exists up front so it can be watched; an empty
	// directory is not a run, so the first start is a fresh run in it.
	dir := filepath.Join(t.TempDir(), "killed")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	events := watch(t, dir)
	rng := rand.New(rand.NewPCG(3, 4))
	kills, midWrite, staleLocks := 0, map[string]int{}, 0
	for attempt := 0; ; attempt++ {
		if attempt == 300 {
			t.Fatalf("the run did not finish after %d attempts", attempt)
		}
		for len(events) > 0 {
			<-events
		}
		args := []string{"-config", cfg, "-run", dir}
		if _, err := os.Stat(filepath.Join(dir, rundir.ConfigFile)); err == nil {
			args = []string{"-resume", dir}
		}
		cmd, stderr, exited := startHelper(t, args...)
		point := killPoints[attempt%len(killPoints)]
		var trigger <-chan time.Time
		if point.event == "" {
			trigger = time.After(time.Duration(rng.IntN(40_000)) * time.Microsecond)
		}
		k := 1 + rng.IntN(max(point.most, 1))
	wait:
		for {
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("attempt %d: %v: %s", attempt, err, stderr.String())
				}
				sameFiles(t, want, dir, rundir.CheckpointFile, rundir.BestFile, rundir.ConfigFile, runlog.MetricsFile, runlog.RolesFile, runlog.CircuitsFile)
				checkRunFiles(t, dir, 60)
				t.Logf("finished after %d kills; temporaries left by kills: %v", kills, midWrite)
				if midWrite[rundir.CheckpointFile] == 0 || midWrite["state"] == 0 {
					t.Errorf("no kill landed inside a checkpoint write and a state write: %v", midWrite)
				}
				// The killed runs' lock files (holding dead pids) were left
				// behind and never blocked the -resume that followed.
				if staleLocks == 0 {
					t.Errorf("no kill left a lock file behind: the resumes never met a stale lock")
				}
				return
			case ev := <-events:
				if point.event != "" && strings.HasPrefix(ev, point.event) {
					if k--; k == 0 {
						break wait
					}
				}
			case <-trigger:
				break wait
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-exited
		kills++
		if _, err := os.Stat(filepath.Join(dir, rundir.LockFile)); err == nil {
			staleLocks++
		}
		for _, name := range temporaries(dir) {
			if strings.HasPrefix(name, "state-") {
				name = "state"
			}
			midWrite[name]++
		}
		checkResumable(t, dir, kills)
	}
}

// writeFaultRun returns the config of the write tests, an uninterrupted run
// of it, and a run of it stopped at step 7 (checkpoints every 5 steps, so
// the next write of a checkpoint is at step 10).
func writeFaultRun(t *testing.T) (yml, want, base string) {
	t.Helper()
	// A wider model makes the files large enough to fail on a small disk
	// part-way: the state (two float64 moments per weight) is ~280 KB, the
	// checkpoint ~70 KB, the metrics log well under 4 KB.
	yml = strings.NewReplacer("d_model: 8, heads: 2", "d_model: 64, heads: 4", "eval_every: 10", "eval_every: 0").Replace(tinyYAML)
	want = filepath.Join(t.TempDir(), "want")
	if _, _, err := runCmd("-config", writeConfig(t, yml), "-run", want); err != nil {
		t.Fatal(err)
	}
	return yml, want, stoppedRun(t, yml, 7)
}

// failedWrite checks a run that failed writing file at the next checkpoint
// (step 10): err is "write <dir>/<file>: ...<reason>" on one line, without
// the name of the temporary file the bytes went to; the
// checkpoint of step 7 and its state are byte-identical to before, no
// temporary file is left; and once fix removes the cause, -resume finishes
// bit-identical to want.
func failedWrite(t *testing.T, dir, want string, before map[string][]byte, err error, file, reason string, fix func()) {
	t.Helper()
	t.Logf("error: %v", err)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "write "+filepath.Join(dir, file)+": ") || !strings.HasSuffix(err.Error(), reason) || strings.Contains(err.Error(), ".tmp-") ||
		strings.Count(err.Error(), dir) != 1 {
		t.Fatalf("error %v: want one line naming %s once (not its temporary file) and %q", err, file, reason)
	}
	for _, f := range []string{rundir.CheckpointFile, "state-7.safetensors", rundir.ConfigFile} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || !bytes.Equal(b, before[f]) {
			t.Errorf("%s changed or went missing: %v", f, err)
		}
	}
	if tmp := temporaries(dir); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
	fix()
	if _, _, err := runCmd("-resume", dir); err != nil {
		t.Fatalf("resuming once the disk is fixed: %v", err)
	}
	sameFiles(t, want, dir, rundir.CheckpointFile, rundir.ConfigFile, runlog.MetricsFile)
	checkRunFiles(t, dir, 40)
}

// mountTmpfs mounts a tmpfs of size bytes at a new directory, or returns
// the reason it cannot.
func mountTmpfs(t *testing.T, size int) (string, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		return "", err
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir, nil
}

// TestWriteFailures: a run that cannot write its next checkpoint stops with
// a clear error and leaves the previous checkpoint intact and resumable.
// Three real mechanisms: a file size limit (RLIMIT_FSIZE, available to any
// user, root included); a full tmpfs (ENOSPC, when mounting is permitted);
// a read-only tmpfs (EROFS; without mount permission, a directory without
// write permission for a non-root user). The file size limit and a run
// directory that cannot be created (its parent is a file) always run, so
// write failures are exercised wherever the test runs.
func TestWriteFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command in subprocesses")
	}
	yml, want, base := writeFaultRun(t)
	before := snapshot(t, base)
	state := len(before["state-7.safetensors"])
	ckpt := len(before[rundir.CheckpointFile])

	t.Run("file size limit", func(t *testing.T) {
		dir := copyDir(t, base)
		// Larger than the metrics log, smaller than a state file.
		cmd := helper(t, "-resume", dir)
		cmd.Env = append(cmd.Env, fsizeEnv+"="+strconv.Itoa(state/2))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("%v, want exit status 1; stderr %q", err, stderr.String())
		}
		msg, ok := strings.CutPrefix(stderr.String(), "train: ")
		if !ok || strings.Count(msg, "\n") != 1 {
			t.Fatalf("stderr %q, want one line", stderr.String())
		}
		failedWrite(t, dir, want, before, errors.New(strings.TrimSuffix(msg, "\n")), "state-10.safetensors", "file too large", func() {})
	})

	t.Run("full disk", func(t *testing.T) {
		// Room for half the checkpoint of step 10, which is written (staged)
		// before its state, so the write that fails is
		// checkpoint.safetensors itself.
		disk, err := mountTmpfs(t, 4<<20)
		if err != nil {
			t.Skipf("cannot mount a tmpfs (%v); the file size limit case covers a failing write", err)
		}
		dir := copyInto(t, base, disk)
		var fs syscall.Statfs_t
		if err := syscall.Statfs(disk, &fs); err != nil {
			t.Fatal(err)
		}
		page := int(fs.Bsize)
		free := int(fs.Bavail) * page
		room := 2*page + ckpt/2
		filler := filepath.Join(disk, "filler")
		if err := os.WriteFile(filler, make([]byte, free-room), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err = runCmd("-resume", dir)
		failedWrite(t, dir, want, before, err, rundir.CheckpointFile, "no space left on device", func() {
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
		})
	})

	t.Run("run directory cannot be created", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, []byte("not a directory"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(file, "run")
		refusedIn(t, "-run below a file", filepath.Dir(file), []string{"-config", writeConfig(t, yml), "-run", out}, "reading the run directory: lstat "+out+": not a directory")
	})

	t.Run("read-only disk", func(t *testing.T) {
		disk, err := mountTmpfs(t, 4<<20)
		var dir string
		var fix func()
		switch {
		case err == nil:
			dir = copyInto(t, base, disk)
			if err := syscall.Mount("", disk, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
				t.Fatal(err)
			}
			fix = func() {
				if err := syscall.Mount("", disk, "", syscall.MS_REMOUNT, ""); err != nil {
					t.Fatal(err)
				}
			}
		case os.Geteuid() != 0:
			dir = copyDir(t, base)
			if err := os.Chmod(dir, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(dir, 0o755) }) // so that TempDir can remove it
			fix = func() {
				if err := os.Chmod(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		default:
			t.Skipf("root without mount permission (%v) cannot make a directory read-only; the file size limit case covers a failing write", err)
		}
		reason := "read-only file system"
		if os.Geteuid() != 0 {
			reason = "permission denied"
		}
		refusedIn(t, "-resume on a read-only disk", dir, []string{"-resume", dir}, "locking the run directory: open "+filepath.Join(dir, "train.lock")+": "+reason)
		fresh := filepath.Join(dir, "fresh")
		refusedIn(t, "a new run on a read-only disk", dir, []string{"-config", writeConfig(t, yml), "-run", fresh}, "creating the run directory: mkdir "+fresh+": "+reason)
		fix()
		if _, _, err := runCmd("-resume", dir); err != nil {
			t.Fatal(err)
		}
		sameFiles(t, want, dir, rundir.CheckpointFile, rundir.ConfigFile, runlog.MetricsFile)
	})
}

// TestStdoutFull: with stdout on /dev/full (issue 11: it exited 0) the run
// still trains and saves to the end, then exits 1 naming the failure.
func TestStdoutFull(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command in a subprocess")
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	dir := filepath.Join(t.TempDir(), "full")
	cmd := helper(t, "-config", writeConfig(t, tinyYAML), "-run", dir)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = full, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	want := "train: writing to stdout: write /dev/stdout: no space left on device\n"
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || stderr.String() != want {
		t.Errorf("stdout /dev/full: %v, stderr %q; want exit status 1 and %q", err, stderr.String(), want)
	}
	checkRunFiles(t, dir, 40)
}

// TestClosedStdoutPipe: train whose stdout is a pipe closed by its reader
// (train ... | head -2) is not killed by SIGPIPE: it trains and saves to
// the end, then exits 1 naming the broken pipe; the run is complete.
func TestClosedStdoutPipe(t *testing.T) {
	cfg := writeConfig(t, tinyYAML)
	dir := filepath.Join(t.TempDir(), "run")
	cmd := helper(t, "-config", cfg, "-run", dir)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first line
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	w.Close()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), "broken pipe") {
		t.Fatalf("exit %v, stderr %q; want exit status 1 naming the broken pipe (not death by SIGPIPE)", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.CheckpointFile)); err != nil {
		t.Errorf("no checkpoint after the run: %v", err)
	}
	if _, _, err := runCmd("-resume", dir); err != nil {
		t.Errorf("resuming the finished run: %v", err)
	}
}
