package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
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
	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/internal/safetensors/sttest"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
	"github.com/attnscope/attnscope/train"
)

// snapshot reads every file under dir (hidden ones included) by relative
// path; a directory maps to nil.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if info.IsDir() {
			files[rel+"/"] = nil
			return nil
		}
		if !info.Mode().IsRegular() {
			// A pipe or a symlink to a device is never read: that could
			// block or never end. Its type and target stand for it.
			target, _ := os.Readlink(path)
			files[rel] = []byte(info.Mode().Type().String() + " " + target)
			return nil
		}
		b, err := os.ReadFile(path)
		files[rel] = b
		return err
	})
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sameSnapshot reports how dir differs from an earlier snapshot.
func sameSnapshot(t *testing.T, name, dir string, before map[string][]byte) {
	t.Helper()
	after := snapshot(t, dir)
	for f, b := range before {
		if a, ok := after[f]; !ok {
			t.Errorf("%s: %s was removed", name, f)
		} else if !bytes.Equal(a, b) {
			t.Errorf("%s: %s changed", name, f)
		}
	}
	for f := range after {
		if _, ok := before[f]; !ok {
			t.Errorf("%s: %s appeared", name, f)
		}
	}
}

// refusedIn runs the command and requires an error on one line containing
// each of want, nothing on stdout or stderr, and dir exactly as before.
func refusedIn(t *testing.T, name, dir string, args []string, want ...string) {
	t.Helper()
	before := snapshot(t, dir)
	stdout, stderr, err := runCmd(args...)
	if !msgtest.Refusal(t, name, err, want...) {
		return
	}
	if stdout != "" || stderr != "" {
		t.Errorf("%s: stdout %q, stderr %q, want both empty", name, stdout, stderr)
	}
	sameSnapshot(t, name, dir, before)
}

// stoppedRun trains yml in a new directory until step stop (as Ctrl-C
// would), leaving a run to resume: config, metrics, the checkpoint and state
// of step stop, and best.safetensors when an evaluation came before it.
func stoppedRun(t *testing.T, yml string, stop int, sets ...string) string {
	t.Helper()
	cfg, err := rundir.ParseConfig("tiny.yaml", []byte(yml), sets)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := train.Run(ctx, cfg, train.Options{Dir: dir, Probes: probes, Observer: func(e train.Event) {
		if e.Step == stop {
			cancel()
		}
	}})
	if err != nil || !res.Interrupted || res.Step != stop {
		t.Fatalf("stopping a run at step %d: %v %+v", stop, err, res)
	}
	return dir
}

// copyDir copies the regular files of src into a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	return copyInto(t, src, t.TempDir())
}

// copyInto copies the regular files of src into the new directory dst/name.
func copyInto(t *testing.T, src, dst string) string {
	t.Helper()
	dir := filepath.Join(dst, filepath.Base(src))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range snapshot(t, src) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// nines is n nines: a number too large for any integer key.
func nines(n int) string { return strings.Repeat("9", n) }

// TestBadConfigs: every kind of bad config file and -set is refused through
// run() with one line naming the file (or -set), the key and the value;
// nothing is printed, a fresh -run directory is not created, and an existing
// run given the bad config with -resume is left byte-identical. A long value
// is quoted to about 80 characters and its length (issue 11: a
// 100,000-digit seed gave a 100 KB error line).
func TestBadConfigs(t *testing.T) {
	prev := stoppedRun(t, tinyYAML, 7)
	cases := []struct {
		name, yml string
		sets      []string
		want      []string
	}{
		{"empty file", "", nil, []string{"bad.yaml: empty config"}},
		{"only comments", "# seed: 1\n", nil, []string{"bad.yaml: empty config"}},
		{"YAML syntax", "seed: 3\nmodel: {d_model: 8, heads: 2\n", nil, []string{"bad.yaml:2:28: YAML syntax: did not find expected ',' or '}'"}},
		{"bad UTF-8 in a comment on line 2", "seed: 1\n# caf\xe9\ntask: {name: copy}\n", nil, []string{"bad.yaml:2:6: YAML syntax: invalid trailing UTF-8 octet"}},
		{"bad UTF-8 in a value on line 3", "seed: 1\n\ntask: {name: c\xffopy}\n", nil, []string{"bad.yaml:3:15: YAML syntax: invalid leading UTF-8 octet"}},
		{"binary garbage", "\x00\x01\xfe\xff", nil, []string{"bad.yaml:1:1: YAML syntax: control characters are not allowed"}},
		{"unknown key", "seed: 3\nmodel:\n  d_modle: 8\n", nil, []string{"bad.yaml:3:3: unknown key model.d_modle (allowed: d_model, heads,"}},
		{"unknown section", "sed: 3\n", nil, []string{"bad.yaml:1:1: unknown key sed (allowed: seed, init_from, task, model, train)"}},
		{"wrong type", "train:\n  lr: fast\n", nil, []string{`bad.yaml:2:7: train.lr = "fast": want a number`}},
		{"fraction for an integer", "train:\n  steps: 2.5\n", nil, []string{"bad.yaml:2:10: train.steps = 2.5: want an integer"}},
		{"number for a section", "task: 5\n", nil, []string{"bad.yaml:1:7: task: want a mapping with keys name, length, symbols, min_length, path, got a value"}},
		{"list for a number", "model:\n  heads: [2, 4]\n", nil, []string{"bad.yaml:2:10: model.heads: want an integer, got a list"}},
		{"negative size", "model:\n  d_model: -8\n", nil, []string{"bad.yaml: model.d_model = -8: must be positive"}},
		{"zero heads", "model:\n  heads: 0\n", nil, []string{"bad.yaml: model.heads = 0: must be positive"}},
		{"zero batch", "train:\n  batch_size: 0\n", nil, []string{"bad.yaml: train.batch_size = 0: must be positive"}},
		{"d_model not divisible", "model:\n  d_model: 10\n  heads: 4\n", nil, []string{"bad.yaml: model.d_model = 10 is not divisible by model.heads = 4"}},
		{"unknown task", "task:\n  name: rotate\n", nil, []string{`bad.yaml: task.name = "rotate": unknown task (want one of: copy, induction, repeat, reverse, sort, text)`}},
		{"unknown schedule", "train:\n  schedule: linear\n", nil, []string{`bad.yaml: train.schedule = "linear": unknown schedule (want one of: constant, cosine)`}},
		{"context too long for the task", "task:\n  length: 100000\n", nil, []string{"bad.yaml: task.length = 100000: must be in [1, 512]"}},
		{"context set by hand", "model:\n  context: 64\n", nil, []string{"bad.yaml:2:3: model.context cannot be set: it is the task's sequence length"}},
		{"absurd batch", "train:\n  batch_size: 1000000\n", nil, []string{"bad.yaml: the run (a training graph of ", "(a training graph of 1000000 x 16 positions", "(limit 8.0 GiB); reduce train.batch_size"}},
		{"absurd width", "model:\n  d_model: 4000000000\n  heads: 1\n", nil, []string{"bad.yaml: the run (a training graph of ", "limit 8.0 GiB"}},
		{"-set unknown key", tinyYAML, []string{"model.hedas=4"}, []string{"-set model.hedas=4: unknown key model.hedas (allowed: d_model, heads,"}},
		{"-set unknown section", tinyYAML, []string{"optim.lr=1"}, []string{"-set optim.lr=1: unknown key optim (allowed: seed, init_from, task, model, train)"}},
		{"-set bad value", tinyYAML, []string{"train.lr=fast"}, []string{`-set train.lr=fast: train.lr = "fast": want a number`}},
		{"-set list value", tinyYAML, []string{"model.heads=[2]"}, []string{"-set model.heads=[2]: model.heads: want an integer, got a list"}},
		{"-set no value", tinyYAML, []string{"model.heads="}, []string{"-set model.heads=: model.heads: want an integer, got no value"}},
		{"-set missing =", tinyYAML, []string{"model.heads"}, []string{"-set model.heads: want key=value"}},
		{"-set missing key", tinyYAML, []string{"=4"}, []string{"-set =4: want key=value"}},
		{"-set newline", tinyYAML, []string{"seed=1\n2"}, []string{`-set "seed=1\n2"`}},
		{"-set invalid result", tinyYAML, []string{"model.heads=3"}, []string{"bad.yaml with -set model.heads=3: model.d_model = 8 is not divisible by model.heads = 3"}},
		{"-set zero heads", tinyYAML, []string{"model.heads=0"}, []string{"-set model.heads=0: model.heads = 0: must be positive"}},
		{"-set last one counts", tinyYAML, []string{"model.heads=0", "model.heads=2", "train.lr=0"}, []string{"-set train.lr=0: train.lr = 0: must be positive"}},
		{"-set unknown path", tinyYAML, []string{"model.attention=native"}, []string{`-set model.attention=native: model.attention = "native": want fused or gorgonia`}},
		{"-set unknown task", tinyYAML, []string{"task.name=rotate"}, []string{`-set task.name=rotate: task.name = "rotate": unknown task`}},
		{"-set absurd", tinyYAML, []string{"train.batch_size=1e9"}, []string{"needs an estimated"}},
		{"100,000-digit seed", "seed: " + nines(100_000) + "\n", nil, []string{`bad.yaml:1:7: seed = "` + nines(80) + `"... (100000 bytes): want an integer >= 0`}},
		{"500 KB task name", "task: {name: " + strings.Repeat("x", 500_000) + "}\n", nil,
			[]string{`bad.yaml: task.name = "` + strings.Repeat("x", 80) + `"... (500000 bytes): unknown task (want one of: copy,`}},
		{"-set 100,000-digit seed", tinyYAML, []string{"seed=" + nines(100_000)},
			[]string{"-set seed=" + nines(75) + `... (100005 bytes): seed = "` + nines(80) + `"... (100000 bytes): want an integer >= 0`}},
		{"-set 3000-byte key", tinyYAML, []string{strings.Repeat("k", 3000) + "=1"},
			[]string{"-set " + strings.Repeat("k", 80) + "... (3002 bytes): unknown key " + strings.Repeat("k", 80) + "... (3000 bytes) (allowed: seed, init_from, task, model, train)"}},
		{"-set absurd eval_size", tinyYAML, []string{"train.eval_size=1e9"}, []string{"bad.yaml: the run (a training graph of 4 x 6 positions, an evaluation graph of 256 rows and a held-out set of 1000000000 rows taking 134.1 GiB) needs an estimated 134.1 GiB (limit 8.0 GiB); reduce train.batch_size, train.eval_size,"}},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(path, []byte(c.yml), 0o644); err != nil {
			t.Fatal(err)
		}
		var sets []string
		for _, s := range c.sets {
			sets = append(sets, "-set", s)
		}
		fresh := filepath.Join(t.TempDir(), "fresh")
		refusedIn(t, c.name+" (fresh run)", fresh, append([]string{"-config", path, "-run", fresh}, sets...), c.want...)
		if _, err := os.Stat(fresh); !os.IsNotExist(err) {
			t.Errorf("%s: %s was created", c.name, fresh)
		}
		refusedIn(t, c.name+" (resume)", prev, append([]string{"-resume", prev, "-config", path}, sets...), c.want...)
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	refusedIn(t, "missing config", dir, []string{"-config", missing, "-run", filepath.Join(dir, "out")}, "reading config: "+missing+": no such file or directory")
	refusedIn(t, "config is a directory", dir, []string{"-config", dir, "-run", filepath.Join(dir, "out")}, "reading config: "+dir+": is a directory, not a regular file")
	// issue 11: a named pipe blocked the open forever.
	pipe := filepath.Join(t.TempDir(), "pipe.yaml")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	refusedIn(t, "config is a named pipe", dir, []string{"-config", pipe, "-run", filepath.Join(dir, "out")}, "reading config: "+pipe+": is a named pipe, not a regular file")
	if _, err := os.Stat("/dev/zero"); err == nil {
		refusedIn(t, "config is /dev/zero", dir, []string{"-config", "/dev/zero", "-run", filepath.Join(dir, "out")}, "reading config: /dev/zero: is a character device, not a regular file")
	}
	refusedIn(t, "bad flag", prev, []string{"-resume", prev, "-steps", "3"}, "bad flags (see -h): flag provided but not defined: -steps")
}

// TestCorruptResume: -resume of a run whose checkpoint, optimizer state,
// metrics or config is broken in each way the issue lists is refused with
// one line naming the file and the problem, printing nothing, and leaving
// every file of the run byte-identical (so fixing the file and resuming
// still works).
func TestCorruptResume(t *testing.T) {
	base := stoppedRun(t, tinyYAML, 7)
	ckpt, err := os.ReadFile(filepath.Join(base, rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	state, err := os.ReadFile(filepath.Join(base, "state-7.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	other := stoppedRun(t, strings.Replace(tinyYAML, "name: copy", "name: reverse", 1), 7)
	otherCkpt, err := os.ReadFile(filepath.Join(other, rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	otherState, err := os.ReadFile(filepath.Join(stoppedRun(t, tinyYAML, 7, "seed=4"), "state-7.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	otherYAML := writeConfig(t, strings.Replace(tinyYAML, "name: copy", "name: reverse", 1))
	headerLen := int(binary.LittleEndian.Uint64(ckpt))
	f32 := func(v float64) []byte { return safetensors.EncodeFloat32([]float32{float32(v)}) }
	flipped := func(file []byte) []byte { // one bit near the end of the data, as a failing disk does
		out := bytes.Clone(file)
		out[len(out)-5] ^= 0x04
		return out
	}
	f64 := func(v float64) []byte { return safetensors.EncodeFloat64([]float64{v}) }

	const ck, st, me, co = rundir.CheckpointFile, "state-7.safetensors", runlog.MetricsFile, rundir.ConfigFile
	cases := []struct {
		name, file string
		content    []byte // nil removes the file
		want       []string
	}{
		{"checkpoint empty", ck, []byte{}, []string{"file is 0 bytes, too short for the 8-byte header length"}},
		{"checkpoint truncated in the length", ck, ckpt[:6], []string{"file is 6 bytes"}},
		{"checkpoint truncated in the header", ck, ckpt[:8+headerLen-1], []string{"exceeds the"}},
		{"checkpoint truncated in the data", ck, ckpt[:len(ckpt)-100], []string{"run past the end of the", "(truncated file?)"}},
		{"checkpoint missing its last byte", ck, ckpt[:len(ckpt)-1], []string{"(truncated file?)"}},
		{"header length beyond the file", ck, append(binary.LittleEndian.AppendUint64(nil, uint64(len(ckpt))), ckpt[8:]...), []string{"header length", "exceeds the", "(truncated file?)"}},
		{"header not JSON", ck, append(binary.LittleEndian.AppendUint64(nil, uint64(headerLen)), append(bytes.Repeat([]byte("nojson!!"), headerLen/8), ckpt[8+headerLen:]...)...),
			[]string{"header does not start with '{'"}},
		{"overlapping offsets", ck, sttest.ShiftOffsets(t, ckpt, "pos_emb.weight", -8), []string{`tensor "pos_emb.weight": data_offsets`, `overlap tensor "tok_emb.weight"`}},
		{"offsets out of range", ck, sttest.ShiftOffsets(t, ckpt, "lm_head.weight", 1e6), []string{`tensor "lm_head.weight": data_offsets`, "run past the end of the"}},
		{"unknown dtype", ck, sttest.EditHeader(t, ckpt, func(h map[string]any) { sttest.Entry(h, "tok_emb.weight")["dtype"] = "Q4" }), []string{`tensor "tok_emb.weight": unknown dtype "Q4"`}},
		{"shape disagrees with the config", ck, sttest.EditHeader(t, ckpt, func(h map[string]any) { sttest.Entry(h, "tok_emb.weight")["shape"] = []int{8, 5} }),
			[]string{`tensor "tok_emb.weight" has shape [8 5], want [5 8] (dim 0 is model.vocab=5)`}},
		{"NaN weight", ck, sttest.SetElement(t, ckpt, "blocks.0.attn.qkv.weight", 3, f32(math.NaN())), []string{`tensor "blocks.0.attn.qkv.weight": value NaN at index [0 3] (flat 3) is not finite`}},
		{"Inf weight", ck, sttest.SetElement(t, ckpt, "lm_head.weight", 9, f32(math.Inf(-1))), []string{`tensor "lm_head.weight": value -Inf at index [1 1] (flat 9) is not finite`}},
		{"checkpoint with a flipped bit", ck, flipped(ckpt), []string{"tensor data does not match its data_sha256", "the file is corrupt or was edited"}},
		{"state with a flipped bit", st, flipped(state), []string{"state-7.safetensors: tensor data does not match its data_sha256"}},
		{"checkpoint of another task", ck, otherCkpt, []string{"checkpoint.safetensors does not belong to the run in", "its config differs (task.name: config.yaml copy, checkpoint reverse"}},
		{"state missing", st, nil, []string{"state-7.safetensors is missing: the checkpoint of step 7 has no optimizer state beside it"}},
		{"state truncated", st, state[:len(state)/2], []string{"safetensors file ", "state-7.safetensors: ", "(truncated file?)"}},
		{"state larger than its weights need", st, append(append([]byte(nil), state...), make([]byte, 2<<20)...), []string{"state-7.safetensors: file is ", "larger than the ", "-byte limit"}},
		{"state of another run at the same step", st, otherState, []string{"state-7.safetensors is not the optimizer state of checkpoint.safetensors: it was saved with other weights (weights_sha256 "}},
		{"state NaN moment", st, sttest.SetElement(t, state, "adam.m.pos_emb.weight", 2, f64(math.NaN())), []string{"state-7.safetensors: adam.m.pos_emb.weight holds NaN at flat index 2; the optimizer state is corrupt"}},
		{"state negative second moment", st, sttest.SetElement(t, state, "adam.v.tok_emb.weight", 0, f64(-1)), []string{"state-7.safetensors: adam.v.tok_emb.weight holds -1 at flat index 0; the optimizer state is corrupt"}},
		{"metrics garbage line", me, []byte("{\"step\":5,\"loss\":1}\nnot json\n"), []string{"metrics.jsonl line 2 is not a metrics record"}},
		{"metrics larger than the run can write", me, bytes.Repeat([]byte("{\"step\":5,\"loss\":1}\n"), 2000),
			[]string{"cannot resume: ", "metrics.jsonl is 40000 bytes, more than the 20992 bytes a run of 40 steps writes at most"}},
		{"roles larger than the run can write", runlog.RolesFile, bytes.Repeat([]byte("{\"step\":5,\"heads\":[]}\n"), 4000),
			[]string{"cannot resume: ", "roles.jsonl is 88000 bytes, more than the 68880 bytes a run of 40 steps writes at most"}},
		{"roles a named pipe", runlog.RolesFile, nil, []string{"roles.jsonl: is a named pipe, not a regular file"}},
		{"circuits larger than the run can write", runlog.CircuitsFile, bytes.Repeat([]byte("{\"step\":5,\"copying\":[]}\n"), 4000),
			[]string{"cannot resume: ", "circuits.jsonl is 96000 bytes, more than the 20992 bytes a run of 40 steps writes at most"}},
		{"metrics a named pipe", me, nil, []string{"cannot resume: ", "metrics.jsonl: is a named pipe, not a regular file"}},
		{"metrics a symlink to /dev/zero", me, nil, []string{"metrics.jsonl is a symbolic link; a run's files are never read or written through a link"}},
		{"checkpoint a named pipe", ck, nil, []string{"is a named pipe, not a regular file"}},
		{"state a named pipe", st, nil, []string{"state-7.safetensors", "is a named pipe, not a regular file"}},
		{"config.yaml broken", co, []byte("seed: [\n"), []string{"config.yaml:1:7: YAML syntax: did not find expected node content"}},
		{"config.yaml of another run", co, []byte(strings.Replace(tinyYAML, "seed: 3", "seed: 4", 1)), []string{"checkpoint.safetensors does not belong to the run in", "(seed: config.yaml 4, checkpoint 3)"}},
	}
	// These cases remove the file and put a special one in its place.
	fifo := func(path string) error { return syscall.Mkfifo(path, 0o644) }
	devZero := func(path string) error { return os.Symlink("/dev/zero", path) }
	special := map[string]func(path string) error{
		"metrics a named pipe": fifo, "metrics a symlink to /dev/zero": devZero, "roles a named pipe": fifo,
		"checkpoint a named pipe": fifo, "state a named pipe": fifo,
	}
	for _, c := range cases {
		dir := copyDir(t, base)
		path := filepath.Join(dir, c.file)
		if c.content == nil {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if makeFile := special[c.name]; makeFile != nil {
				if err := makeFile(path); err != nil {
					t.Fatal(err)
				}
			}
		} else if err := os.WriteFile(path, c.content, 0o644); err != nil {
			t.Fatal(err)
		}
		want := c.want
		if c.file == ck && !strings.Contains(c.name, "another") {
			want = append(want, "checkpoint "+path+": ")
		} else {
			want = append(want, dir)
		}
		refusedIn(t, c.name, dir, []string{"-resume", dir}, want...)
	}
	dir := copyDir(t, base)
	refusedIn(t, "-config of another task", dir, []string{"-resume", dir, "-config", otherYAML},
		"cannot resume "+dir+": the config differs (task.name: saved copy, given reverse); on resume only train.steps may change")
	if err := os.Remove(filepath.Join(dir, ck)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ck), 0o755); err != nil {
		t.Fatal(err)
	}
	refusedIn(t, "checkpoint is a directory", dir, []string{"-resume", dir}, "checkpoint "+filepath.Join(dir, ck)+": is a directory")
}

// TestMainExitCode: main turns a refused run into exit status 1 and exactly
// one line on stderr ("train: ..."), with no panic or stack trace.
func TestMainExitCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command in subprocesses")
	}
	bad := writeConfig(t, "model:\n  heads: [4]\n")
	corrupt := copyDir(t, stoppedRun(t, tinyYAML, 2))
	if err := os.WriteFile(filepath.Join(corrupt, rundir.CheckpointFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-config", bad}, "train: " + bad + ":2:10: model.heads: want an integer, got a list\n"},
		{[]string{"-resume", corrupt}, "train: checkpoint " + filepath.Join(corrupt, rundir.CheckpointFile) + ": file is 7 bytes, too short for the 8-byte header length\n"},
	} {
		cmd := helper(t, c.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%q: %v, want exit status 1", c.args, err)
		}
		if stderr.String() != c.want || stdout.Len() > 0 {
			t.Errorf("%q: stderr %q, stdout %q; want stderr %q", c.args, stderr.String(), stdout.String(), c.want)
		}
	}
}

// TestNaNLossStops: an absurd learning rate makes the loss NaN at step 2; the
// command fails naming the step, and the run directory keeps the checkpoint
// of step 1 (loadable, finite, with its optimizer state) and no metrics line
// past it. Evaluated after every step, the same run stops at step 1 naming
// eval_loss, before writing any checkpoint of the diverged weights.
func TestNaNLossStops(t *testing.T) {
	cfg := writeConfig(t, tinyYAML)
	dir := filepath.Join(t.TempDir(), "nan")
	_, _, err := runCmd("-config", cfg, "-run", dir, "-set", "train.lr=1e30", "-set", "train.warmup_steps=0",
		"-set", "train.checkpoint_every=1", "-set", "train.log_every=1")
	want := "step 2: the training loss is NaN; stopping (the checkpoint of step 1 is untouched)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	ck, err := checkpoint.Load(filepath.Join(dir, rundir.CheckpointFile))
	if err != nil || ck.Step != 1 {
		t.Fatalf("checkpoint after the NaN: %v, %+v", err, ck)
	}
	if _, err := ck.Model.Tensors(); err != nil { // refuses a NaN or Inf weight, naming it
		t.Fatalf("checkpoint of step 1: %v", err)
	}
	if logs, err := runlog.ReadMetrics(dir); err != nil || len(logs.Train) != 1 || logs.Train[0].Step != 1 || len(logs.Eval) != 0 {
		t.Errorf("metrics after the NaN: %+v %v, want the training line of step 1", logs, err)
	}
	checkRunFiles(t, dir, 1)

	// Evaluating right after the first update: the training loss of step 1
	// was finite, the evaluation of the weights it left is not.
	dir = filepath.Join(t.TempDir(), "nan-eval")
	_, _, err = runCmd("-config", cfg, "-run", dir, "-set", "train.lr=1e30", "-set", "train.warmup_steps=0",
		"-set", "train.eval_every=1", "-set", "train.log_every=1")
	if want := "step 1: eval_loss is NaN; stopping"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if logs, err := runlog.ReadMetrics(dir); err != nil || len(logs.Train) != 1 || logs.Train[0].Step != 1 || len(logs.Eval) != 0 {
		t.Errorf("metrics after the NaN evaluation: %+v %v, want the training line of step 1", logs, err)
	}
	for _, f := range []string{rundir.CheckpointFile, rundir.BestFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s was written from diverged weights (%v)", f, err)
		}
	}
	checkRunFiles(t, dir, 0)
}

// checkRunFiles requires dir to hold exactly a run's files with the state of
// step: no temporaries, no other state files.
func checkRunFiles(t *testing.T, dir string, step int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case rundir.ConfigFile, runlog.MetricsFile, runlog.RolesFile, runlog.CircuitsFile, rundir.CheckpointFile, rundir.BestFile, "state-" + strconv.Itoa(step) + ".safetensors":
		default:
			t.Errorf("%s holds a stray %s", dir, e.Name())
		}
	}
}

// TestStopSignals: SIGINT (Ctrl-C), SIGTERM (what kill, systemd and
// container runtimes send) and SIGHUP (a closed terminal or ssh session;
// issue 11: it killed the run without a checkpoint) each make the command save a checkpoint of the
// last completed step beside its optimizer state and exit 128 plus the
// signal's number (130, 143, 129; issue 37: it exited 0, which a script
// could not tell from a finished run) saying how to resume; -resume then
// finishes bit-identical to an uninterrupted run.
func TestStopSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command in a subprocess")
	}
	yml := strings.Replace(tinyYAML, "steps: 40", "steps: 3000", 1)
	cfg := writeConfig(t, strings.Replace(yml, "checkpoint_every: 5", "checkpoint_every: 0", 1))
	want := filepath.Join(t.TempDir(), "want")
	if _, _, err := runCmd("-config", cfg, "-run", want); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "stopped")
			cmd := helper(t, "-config", cfg, "-run", dir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The signal goes once training has begun (the first metrics line).
			for {
				if b, _ := os.ReadFile(filepath.Join(dir, runlog.MetricsFile)); len(b) > 0 {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			out := stdout.String()
			if strings.Contains(out, "steps 1-3000 of 3000") {
				t.Fatal("the run finished before the signal arrived: the test did not interrupt it")
			}
			m := regexp.MustCompile(`interrupted at step (\d+)/3000; checkpoint saved\. Continue with:\n  go run \./cmd/train -resume ` + regexp.QuoteMeta(dir) + "\n").FindStringSubmatch(out)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 128+int(sig) || m == nil || stderr.Len() > 0 {
				t.Fatalf("after %v: %v (want exit status %d), stderr %q, stdout:\n%s", sig, err, 128+int(sig), stderr.String(), out)
			}
			step, _ := strconv.Atoi(m[1])
			if ck, err := checkpoint.Load(filepath.Join(dir, rundir.CheckpointFile)); err != nil || ck.Step != step {
				t.Fatalf("checkpoint after %v at step %d: %v %+v", sig, step, err, ck)
			}
			checkRunFiles(t, dir, step)
			if _, _, err := runCmd("-resume", dir); err != nil {
				t.Fatal(err)
			}
			sameFiles(t, want, dir, rundir.CheckpointFile, rundir.BestFile, runlog.MetricsFile, rundir.ConfigFile, runlog.RolesFile, runlog.CircuitsFile)
			checkRunFiles(t, dir, 3000)
		})
	}
}

// TestKernelEnvRefused: an ATTNSCOPE_KERNEL value internal/kernels does not
// know makes the command exit 1 with one line naming the variable, the value
// and the allowed paths, before anything is written.
func TestKernelEnvRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command in a subprocess")
	}
	out := filepath.Join(t.TempDir(), "run")
	cmd := helper(t, "-config", writeConfig(t, tinyYAML), "-run", out)
	cmd.Env = append(cmd.Env, "ATTNSCOPE_KERNEL=sse")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("%v, want exit status 1", err)
	}
	want := `train: ATTNSCOPE_KERNEL="sse": unknown kernel path (allowed here: auto, generic`
	if !strings.HasPrefix(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 1 || stdout.Len() > 0 {
		t.Errorf("stderr %q, stdout %q; want one line starting %q", stderr.String(), stdout.String(), want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("run directory %s exists after the refusal: %v", out, err)
	}
}
