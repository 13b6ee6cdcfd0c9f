package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/internal/progress"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/open/opentest"
)

// The lighthouse keeper's log and the nanoGPT character model of it.
const (
	logCorpus   = "../../open/nanogpt/testdata/corpus.txt"
	logModel    = "../../open/nanogpt/testdata/bias/ckpt.pt"
	logMetaFile = "../../open/nanogpt/testdata/meta.pkl"
)

// corpusArgs are inspect's arguments scoring the log's model over windows
// of the log, with more flags after.
func corpusArgs(more ...string) []string {
	return append([]string{logModel, "-vocab", logMetaFile, "-corpus", logCorpus}, more...)
}

// corpusRow is one head's row of the text view: layer, head, then six
// mean±sd cells.
var corpusRow = regexp.MustCompile(`(?m)^ +(\d+) +(\d+)((?: +\d+\.\d\d±\d+\.\d\d){6})$`)

// TestCorpusView: inspect -corpus prints one row per head of the model
// whose cells are the means and standard deviations analysis.CorpusHeads
// gives over the same windows (the seed's), no line wider than 80 columns;
// the progress line counts the windows and clears; stdout is the same with
// progress as without.
func TestCorpusView(t *testing.T) {
	plainEnv(t, "80")
	args := corpusArgs("-windows", "6", "-window-length", "20", "-seed", "3")
	with, out, shown := runProgress(t, args...)
	if !bytes.Equal(with, out) {
		t.Errorf("stdout with progress differs from stdout without:\n%s\n---\n%s", with, out)
	}
	if !strings.Contains(shown, "scoring heads over windows [") || !strings.Contains(shown, "/6 windows") || !strings.HasSuffix(shown, "\r\x1b[K") {
		t.Errorf("no progress of the windows, or not cleared: %q", shown)
	}
	op, err := open.Open(logModel, open.Options{Vocab: logMetaFile})
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(logCorpus)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := op.Tokenizer.Encode(string(text))
	if err != nil {
		t.Fatal(err)
	}
	want, err := analysis.CorpusHeads(op.Model, ids, analysis.CorpusOptions{Windows: 6, Length: 20, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	rows := corpusRow.FindAllStringSubmatch(string(out), -1)
	if len(rows) != len(want.Heads) {
		t.Fatalf("%d head rows, want %d:\n%s", len(rows), len(want.Heads), out)
	}
	for i, h := range want.Heads {
		var cells string
		for _, s := range h.Scores {
			cells += fmt.Sprintf(" %.2f±%.2f", s.Mean, s.SD)
		}
		if got := fmt.Sprintf("%s %s %s", rows[i][1], rows[i][2], strings.Join(strings.Fields(rows[i][3]), " ")); got != fmt.Sprintf("%d %d%s", h.Layer, h.Head, cells) {
			t.Errorf("row %d: %q, want layer %d head %d%s", i, got, h.Layer, h.Head, cells)
		}
	}
	for i, line := range strings.Split(string(out), "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("line %d is %d wide: %q", i+1, n, line)
		}
	}
	if !strings.Contains(prose(string(out)), "over 6 windows of 20 tokens") {
		t.Errorf("the heading does not say what was scored:\n%s", out)
	}
}

// TestCorpusJSON: -corpus -json is one object whose keys are snake_case,
// listed in docs/json.md's section on it, every one of them; its heads are
// the model's, each with the six statistics.
func TestCorpusJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := runWith(corpusArgs("-windows", "3", "-json"), &stdout, &stderr, nil); err != nil {
		t.Fatal(err)
	}
	checkKeys(t, "-corpus -json", stdout.Bytes())
	got := map[string]bool{}
	var v any
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	jsonPaths(v, "", got)
	documented := corpusDocumented(t)
	for k := range got {
		if !documented[k] {
			t.Errorf("key %s of -corpus -json is not in docs/json.md", k)
		}
	}
	for k := range documented {
		if !got[k] {
			t.Errorf("docs/json.md lists %s, which -corpus -json does not write", k)
		}
	}
	if n := strings.Count(stdout.String(), `"score":"induction"`); n != 4 {
		t.Errorf("%d heads with an induction score, want the model's 4:\n%s", n, stdout.String())
	}
}

// corpusDocumented are the key paths of docs/json.md's section on
// inspect -corpus -json.
func corpusDocumented(t *testing.T) map[string]bool {
	t.Helper()
	src, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(src), "\n## `inspect -corpus -json`, key by key\n")
	if !ok {
		t.Fatal("docs/json.md has no section \"`inspect -corpus -json`, key by key\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	keys := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9_.\\[\\]]+)` \\|").FindAllStringSubmatch(section, -1) {
		keys[m[1]] = true
	}
	return keys
}

// jsonPaths adds the key paths of v under path, arrays as "[]".
func jsonPaths(v any, path string, keys map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			keys[p] = true
			jsonPaths(child, p, keys)
		}
	case []any:
		for _, child := range x {
			jsonPaths(child, path+"[]", keys)
		}
	}
}

// TestCorpusRefusals: what -corpus cannot score is refused in one line
// naming the problem, before any output.
func TestCorpusRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty, binary, short := write("empty.txt", ""), write("binary.txt", "ab\xffcd"), write("short.txt", "the lamp")
	noTokenizer := opentest.TinyGPT2Dir(t, 16, nil)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{logModel, "-vocab", logMetaFile, "-windows", "5"}, "-windows is used only with -corpus FILE"},
		{[]string{logModel, "-vocab", logMetaFile, "-window-length", "5"}, "-window-length is used only with -corpus FILE"},
		{corpusArgs("-ablate"), "does not combine with -ablate"},
		{corpusArgs("-text", "the lamp"), "does not combine with -text"},
		{corpusArgs("-layer", "1"), "does not combine with -layer"},
		{corpusArgs("-windows", "0"), "-windows 0: must be in [1, 1000000]"},
		{corpusArgs("-window-length", "1"), "-window-length 1: must be at least 2"},
		{corpusArgs("-window-length", "33"), "windows of 33 tokens: longer than the model's context of 32"},
		{[]string{logModel, "-vocab", logMetaFile, "-corpus", empty}, "the file is empty"},
		{[]string{logModel, "-vocab", logMetaFile, "-corpus", binary}, "not UTF-8 text"},
		{[]string{logModel, "-vocab", logMetaFile, "-corpus", short}, "the text is 8 tokens, shorter than one window of 32"},
		{[]string{logModel, "-vocab", logMetaFile, "-corpus", filepath.Join(dir, "none.txt")}, "none.txt"},
		{[]string{noTokenizer, "-corpus", logCorpus}, "opened without a tokenizer to read the text with (it came with no tokenizer files)"},
		{[]string{inductionCheckpoint, "-corpus", logCorpus}, "has no tokenizer to read a text with"},
	} {
		var stdout, stderr bytes.Buffer
		err := runWith(c.args, &stdout, &stderr, progress.NewLine(&stderr, false, 80))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || stdout.Len() > 0 {
			t.Errorf("%q: got %v (stdout %q), want one line holding %q", c.args, err, stdout.String(), c.want)
		}
	}
}

// TestUsageCorpusSample: docs/usage.md shows, whole, what inspect -corpus
// prints on the nanoGPT fixture at 80 columns, run from the module's root
// as the docs' command is.
func TestUsageCorpusSample(t *testing.T) {
	plainEnv(t, "80")
	want := docBlock(t, usagePath, "head statistics of open/nanogpt/testdata/bias/ckpt.pt")
	t.Chdir(filepath.Join("..", ".."))
	fixture := "open/nanogpt/testdata/"
	got := string(runNoted(t, fixture+"bias/ckpt.pt", "-vocab", fixture+"meta.pkl", "-corpus", fixture+"corpus.txt", "-windows", "200", "-window-length", "32"))
	if got != want {
		t.Errorf("docs/usage.md's -corpus sample differs from what inspect prints now:\n--- docs/usage.md\n%s--- inspect\n%s", want, got)
	}
}

// TestCorpusThousandHeads: inspect -corpus on a model of 1,024 heads (32 x
// 32, a tokenizer of 16 letters written beside it) fits 80 columns and
// lists the 8 strongest heads of each of the six statistics, summing up
// the other 1,016 in a line each.
func TestCorpusThousandHeads(t *testing.T) {
	plainEnv(t, "80")
	dir := thousandHeadsDir(t)
	var vocab, text []string
	for i := range 16 {
		vocab = append(vocab, fmt.Sprintf("%q: %d", string(rune('a'+i)), i))
	}
	for i := range 300 {
		text = append(text, string(rune('a'+i*7%16)))
	}
	files := map[string]string{"vocab.json": "{" + strings.Join(vocab, ", ") + "}", "merges.txt": "#version: 0.2\n", "corpus.txt": strings.Join(text, "")}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := string(runNoted(t, dir, "-corpus", filepath.Join(dir, "corpus.txt"), "-windows", "2", "-window-length", "16"))
	for i, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("line %d is %d wide: %q", i+1, n, line)
		}
	}
	if rows, rest := len(corpusRow.FindAllString(out, -1)), strings.Count(out, "the other 1016 heads:"); rows != 6*8 || rest != 6 {
		t.Errorf("%d head rows and %d lines on the others, want 48 and 6:\n%s", rows, rest, out)
	}
}
