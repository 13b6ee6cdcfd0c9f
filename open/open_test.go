package open

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/safetensors/sttest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// corpus is a text whose lines can be shuffled without changing its
// characters, so only its content tells two versions apart.
var corpus = strings.Repeat("alpha beta gamma\ndelta epsilon zeta\neta theta iota\nkappa lambda mu\n", 5)

// textRun writes a run of an untrained text model on the file at text
// into dir, as train leaves one: config.yaml and checkpoint.safetensors.
func textRun(t *testing.T, dir, text string) {
	t.Helper()
	cfg, err := rundir.ParseConfig("text.yaml", []byte(`
task: {name: text, path: `+text+`, length: 8}
model: {d_model: 8, heads: 2, layers: 1}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(cfg.Model, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	yml, err := cfg.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.ConfigFile), yml, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Save(filepath.Join(dir, rundir.CheckpointFile), m, cfg, 1); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// plant rewrites the text record in the checkpoint at path to name target:
// what a sender edits into a checkpoint to make it read a file of the
// receiver's. The data digest is recomputed, as the sender can.
func plant(t *testing.T, path, target string) {
	t.Helper()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file = sttest.EditConfig(t, file, func(run map[string]any) {
		task := run["task"].(map[string]any)
		task["path"] = target
		task["file"].(map[string]any)["path"] = target
	})
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoneCheckpointReadsNoNamedFile: a checkpoint opened on its own reads
// no file its metadata names (absolute, ../, a symlink leading out), yet
// opens with its characters; windows come only from -data.
func TestLoneCheckpointReadsNoNamedFile(t *testing.T) {
	dir := t.TempDir()
	textRun(t, filepath.Join(dir, "run"), write(t, filepath.Join(dir, "text.txt"), corpus))
	secret := write(t, filepath.Join(dir, "secret.txt"), strings.Repeat("alpha beta\n", 20))
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(home, "link.txt")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(home)
	sent, err := os.ReadFile(filepath.Join(dir, "run", rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{secret, "../secret.txt", "link.txt"} {
		path := write(t, filepath.Join(home, "sent.safetensors"), string(sent))
		plant(t, path, target)
		var notices bytes.Buffer
		op, err := Open(path, Options{Notices: &notices})
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if op.DataFile != "" || data.HasWindows(op.Task) || op.RunDir != "" || notices.Len() != 0 {
			t.Errorf("planted %s: read %q, windows %v, run %q, notices %q", target, op.DataFile, data.HasWindows(op.Task), op.RunDir, notices.String())
		}
		if ids, _, err := data.Encode(op.Task, "beta"); err != nil || len(ids) != 4 {
			t.Errorf("planted %s: the characters travel in the checkpoint: %v %v", target, ids, err)
		}
		op, err = Open(path, Options{Data: filepath.Join(dir, "text.txt"), Notices: &notices})
		if err != nil || !data.HasWindows(op.Task) || !strings.Contains(notices.String(), "reading windows of "+filepath.Join(dir, "text.txt")) {
			t.Errorf("planted %s with -data: %v, notices %q", target, err, notices.String())
		}
	}
}

// TestRunReadsItsRecordedFile: a run directory reads the file its run
// recorded, from wherever it is opened, and names it; a file whose content
// changed (its lines shuffled: the same characters) is refused with both
// digests; -data finds a moved copy and refuses another text.
func TestRunReadsItsRecordedFile(t *testing.T) {
	dir := t.TempDir()
	text := write(t, filepath.Join(dir, "text.txt"), corpus)
	run := filepath.Join(dir, "run")
	textRun(t, run, text)
	t.Chdir(t.TempDir())
	var notices bytes.Buffer
	for _, path := range []string{run, filepath.Join(run, rundir.CheckpointFile)} {
		notices.Reset()
		op, err := Open(path, Options{Notices: &notices})
		if err != nil || op.DataFile != text || op.RunDir != run || !data.HasWindows(op.Task) {
			t.Fatalf("%s: %v", path, err)
		}
		if want := "reading windows of " + text + "\n"; notices.String() != want {
			t.Errorf("%s: notices %q, want %q", path, notices.String(), want)
		}
	}
	lines := strings.SplitAfter(corpus, "\n")
	shuffled := lines[1] + lines[0] + strings.Join(lines[2:], "")
	write(t, text, shuffled)
	_, err := Open(run, Options{})
	size := strconv.Itoa(len(corpus))
	for _, want := range []string{text, "content differs from what training read", "recorded " + size + " bytes, sha256 ", "found " + size + " bytes, sha256 ", "give -data"} {
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("shuffled file: %v, want a line with %q", err, want)
		}
	}
	moved := write(t, filepath.Join(dir, "moved.txt"), corpus)
	if op, err := Open(run, Options{Data: moved}); err != nil || op.DataFile != moved {
		t.Errorf("-data with a moved copy: %v", err)
	}
	if _, err := Open(run, Options{Data: text}); err == nil || !strings.Contains(err.Error(), "content differs") {
		t.Errorf("-data with other content: %v", err)
	}
}

// TestLegacyRun: a run written before runs recorded their text file opens
// with one notice that its content cannot be checked; its task.path is
// relative to where train ran, and the refusal says so when it is not
// found from here.
func TestLegacyRun(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	write(t, "text.txt", corpus)
	textRun(t, "run", "text.txt")
	ckpt := filepath.Join("run", rundir.CheckpointFile)
	file, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	file = sttest.EditConfig(t, file, func(run map[string]any) { delete(run["task"].(map[string]any), "file") })
	write(t, ckpt, string(file))
	yml, err := os.ReadFile(filepath.Join("run", rundir.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	legacy := cutBetween(string(yml), "  file:\n", "  chars:")
	write(t, filepath.Join("run", rundir.ConfigFile), legacy)
	var notices bytes.Buffer
	op, err := Open("run", Options{Notices: &notices})
	if err != nil || op.DataFile != "text.txt" {
		t.Fatalf("legacy run: %v", err)
	}
	if !strings.Contains(notices.String(), "records no SHA-256 of its text file, so the content of text.txt cannot be checked") {
		t.Errorf("notices %q", notices.String())
	}
	t.Chdir(t.TempDir())
	_, err = Open(filepath.Join(dir, "run"), Options{})
	if err == nil || !strings.Contains(err.Error(), "task.path is relative to the directory train ran in; name the file with -data") {
		t.Errorf("legacy run opened elsewhere: %v", err)
	}
}

// cutBetween removes from s the first from and what follows it up to the
// next to.
func cutBetween(s, from, to string) string {
	i := strings.Index(s, from)
	j := strings.Index(s[i:], to)
	return s[:i] + s[i+j:]
}

// TestForeignCheckpointInARun: a checkpoint whose task is not its run
// directory's does not get the run's file.
func TestForeignCheckpointInARun(t *testing.T) {
	dir := t.TempDir()
	textRun(t, filepath.Join(dir, "run"), write(t, filepath.Join(dir, "text.txt"), corpus))
	textRun(t, filepath.Join(dir, "other"), write(t, filepath.Join(dir, "other.txt"), strings.ToUpper(corpus)))
	foreign, err := os.ReadFile(filepath.Join(dir, "other", rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "run", rundir.CheckpointFile), string(foreign))
	if _, err := Open(filepath.Join(dir, "run"), Options{}); err == nil || !strings.Contains(err.Error(), "does not belong to the run in") {
		t.Errorf("a foreign checkpoint: %v", err)
	}
}
