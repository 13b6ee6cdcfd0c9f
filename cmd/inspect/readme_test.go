package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/cli/clitest"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/train"
)

// Where the samples the test compares live, relative to this package.
var (
	readmePath = filepath.Join("..", "..", "README.md")
	usagePath  = filepath.Join("..", "..", "docs", "usage.md")
)

// elision is the line by which a sample marks output it leaves out.
const elision = "...\n"

// docBlock returns the fenced block of the Markdown file at path that starts
// with the line first (without the fences).
func docBlock(t *testing.T, path, first string) string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	at := strings.Index(text, "```\n"+first)
	if at < 0 {
		t.Fatalf("%s has no block starting %q", path, first)
	}
	block := text[at+4:]
	return block[:strings.Index(block, "```")]
}

// checkExcerpt fails unless every run of whole lines of excerpt between
// elision lines appears in full, as whole lines and in the same order.
func checkExcerpt(t *testing.T, name, excerpt, full string) {
	t.Helper()
	rest := "\n" + full
	for _, chunk := range strings.Split(excerpt, elision) {
		if chunk == "" {
			continue
		}
		at := strings.Index(rest, "\n"+chunk)
		if at < 0 {
			t.Errorf("%s: the lines %q are not, in this order, in the output:\n%s", name, chunk, full)
			return
		}
		rest = rest[at+len(chunk):]
	}
}

// TestREADMESamples runs what the README shows and compares the output with
// its samples: the quick start's copy run (configs/copy.yaml, trained here
// as the README's first command does) under inspect runs/copy -layer 0
// -head 0 -color never, printed whole in docs/usage.md and in part in the README,
// and the worked example's ablation table (the committed induction run is
// configs/induction.yaml's). A change that moves either output fails here
// until the docs are updated.
func TestREADMESamples(t *testing.T) {
	dir := trainCopy(t)
	plainEnv(t, "80")
	got := string(runOK(t, dir, "-layer", "0", "-head", "0", "-color", "never"))
	got = strings.ReplaceAll(got, dir, "runs/copy")
	if want := docBlock(t, usagePath, "checkpoint runs/copy (step 1000)"); got != want {
		t.Errorf("docs/usage.md's copy sample differs from what inspect prints now:\n--- docs/usage.md\n%s--- inspect\n%s", want, got)
	}
	checkExcerpt(t, "the README's copy sample", docBlock(t, readmePath, "layer head  role       score entropy"), got)

	table := string(runOK(t, "-checkpoint", inductionCheckpoint, "-ablate", "-color", "never"))
	for _, line := range strings.Split(strings.TrimSpace(docBlock(t, readmePath, "layer head  role                             loss")), "\n") {
		if !strings.Contains(table, line+"\n") {
			t.Errorf("the README's ablation line %q is not in what inspect -ablate prints:\n%s", line, table)
		}
	}
}

// trainCopy trains configs/copy.yaml, as the README's first command does,
// into a new runs/copy and returns its directory.
func trainCopy(t *testing.T) string {
	t.Helper()
	cfg, err := rundir.LoadConfig(filepath.Join("..", "..", "configs", "copy.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "runs", "copy")
	if _, err := train.Run(context.Background(), cfg, train.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readmeNotRun names the models whose README inspect lines no test runs as
// written, and why; TestDocCommandsParse still parses those lines.
var readmeNotRun = map[string]string{
	"runs/induction-mqa": "needs a run of its own, 4-6 s of training",
	"runs/lengths":       "needs configs/lengths.yaml's run, about 8 s of training",
	"runs/text":          "needs configs/text.yaml's run, about 40 s of training",
	"gpt2":               "needs GPT-2 downloaded",
}

// TestREADMEInspectCommands: every other inspect line of the README runs as
// written from a directory whose runs/copy is the quick start's run and
// whose runs/induction is the committed induction run (configs/induction.yaml's):
// each exits 0 with nothing on stderr, and writes the -png or -html file it
// names.
func TestREADMEInspectCommands(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	lines := clitest.READMECommands(t, root, "inspect")
	copyRun := trainCopy(t)
	plainEnv(t, "80")
	t.Chdir(filepath.Dir(filepath.Dir(copyRun)))
	if err := os.Symlink(filepath.Join(root, "testdata", "induction"), filepath.Join("runs", "induction")); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, c := range lines {
		if model := slices.IndexFunc(c.Args, func(a string) bool { _, ok := readmeNotRun[a]; return ok }); model >= 0 {
			t.Logf("%s: not run (%s)", c.Where, readmeNotRun[c.Args[model]])
			continue
		}
		var stdout, stderr bytes.Buffer
		if err := run(c.Args, &stdout, &stderr); err != nil || stderr.Len() > 0 {
			t.Errorf("%s: inspect %s: %v %s", c.Where, strings.Join(c.Args, " "), err, stderr.String())
			continue
		}
		ran++
		for i, a := range c.Args[:len(c.Args)-1] {
			if a != "-png" && a != "-html" {
				continue
			}
			if info, err := os.Stat(c.Args[i+1]); err != nil || info.Size() == 0 {
				t.Errorf("%s: %s %s wrote no file (%v)", c.Where, a, c.Args[i+1], err)
			}
		}
	}
	if ran < 7 {
		t.Errorf("ran %d of the README's inspect lines, want the 7 on runs/copy and runs/induction", ran)
	}
}

// TestUsageInductionSamples: docs/usage.md's worked example shows, whole,
// what inspect prints on the committed induction run (configs/induction.yaml's
// run, as runs/induction): the run view at 100 columns and the ablation
// table at 80. A retrained run or a changed view fails here until the docs
// are regenerated.
func TestUsageInductionSamples(t *testing.T) {
	plainEnv(t, "100")
	view := strings.Replace(string(runOK(t, "-run", inductionRun)), "run "+inductionRun+":", "run runs/induction:", 1)
	if want := docBlock(t, usagePath, "run runs/induction: steps"); view != want {
		t.Errorf("docs/usage.md's run view differs from what inspect -run prints now:\n--- docs/usage.md\n%s--- inspect\n%s", want, view)
	}
	plainEnv(t, "80")
	out := string(runOK(t, "-checkpoint", inductionCheckpoint, "-ablate", "-color", "never"))
	table := out[strings.Index(out, "ablation (zero):"):]
	if want := docBlock(t, usagePath, "ablation (zero): "); table != want {
		t.Errorf("docs/usage.md's ablation table differs from what inspect -ablate prints now:\n--- docs/usage.md\n%s--- inspect\n%s", want, table)
	}
}

// TestREADMECircuitsTable: every row of the README's -circuits table shows,
// rounded as printed there, what inspect -circuits -json computes on the
// committed induction run: the head's role, prefix matching, copying,
// direct logit (and the logit it is part of, in the header) and the share
// patching restores.
func TestREADMECircuitsTable(t *testing.T) {
	var j struct {
		Heads    [][]struct{ Role string } `json:"heads"`
		Circuits struct {
			PrefixMatching [][]float64 `json:"prefix_matching"`
			Copying        []struct {
				Layer, Head int
				Score       float64
			} `json:"copying"`
			DirectLogit struct {
				Heads [][]float64 `json:"heads"`
				Logit float64     `json:"logit"`
			} `json:"direct_logit"`
			Patching struct {
				Restored [][]float64 `json:"restored"`
			} `json:"patching"`
		} `json:"circuits"`
	}
	if err := json.Unmarshal(runOK(t, "-checkpoint", inductionCheckpoint, "-circuits", "-json"), &j); err != nil {
		t.Fatal(err)
	}
	c := j.Circuits
	copying := map[[2]int]float64{}
	for _, cp := range c.Copying {
		copying[[2]int{cp.Layer, cp.Head}] = cp.Score
	}
	doc, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	header := fmt.Sprintf("| head | prefix matching | copying | direct logit (of %.2f) | patching restores |\n|---|---|---|---|---|\n", c.DirectLogit.Logit)
	at := strings.Index(string(doc), header)
	if at < 0 {
		t.Fatalf("the README has no circuits table headed %q", header)
	}
	rows := strings.SplitN(string(doc)[at+len(header):], "\n\n", 2)[0]
	for _, row := range strings.Split(rows, "\n") {
		var l, h int
		if _, err := fmt.Sscanf(row, "| L%d H%d ", &l, &h); err != nil || l >= len(c.PrefixMatching) || h >= len(c.PrefixMatching[l]) {
			t.Errorf("README circuits row %q names no head of the model (%v)", row, err)
			continue
		}
		want := fmt.Sprintf("| L%d H%d (%s) | %.3f | %.3f | %+.2f | %.3f |", l, h, j.Heads[l][h].Role,
			c.PrefixMatching[l][h], copying[[2]int{l, h}], c.DirectLogit.Heads[l][h], c.Patching.Restored[l][h])
		if row != want {
			t.Errorf("README circuits row %q, inspect computes %q", row, want)
		}
	}
}
