package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/runlog"
)

// inductionRun is the committed run of configs/induction.yaml (see package
// ablation's test for how to regenerate it).
const inductionRun = "../../testdata/induction"

// formationSteps recomputes, straight from roles.jsonl, each head's
// strongest pattern at the last line and the first step its score is above
// 0.5 (-1 if never), keyed "L1 H3 induction".
func formationSteps(t *testing.T, dir string) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "roles.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []struct {
		Step  int                    `json:"step"`
		Heads [][]map[string]float64 `json:"heads"`
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, struct {
			Step  int                    `json:"step"`
			Heads [][]map[string]float64 `json:"heads"`
		}{})
		if err := json.Unmarshal(sc.Bytes(), &lines[len(lines)-1]); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]int{}
	last := lines[len(lines)-1]
	for l, layer := range last.Heads {
		for h, scores := range layer {
			best, bestScore := "", -1.0
			for p, s := range scores {
				if s > bestScore || s == bestScore && p < best {
					best, bestScore = p, s
				}
			}
			step := -1
			for _, line := range lines {
				if line.Heads[l][h][best] > 0.5 {
					step = line.Step
					break
				}
			}
			if bestScore < 0.4 { // under the role threshold: named diffuse, as in every view
				best = "diffuse"
			}
			out[fmt.Sprintf("L%d H%d %s", l, h, best)] = step
		}
	}
	return out
}

// TestRunView: inspect -run on the committed induction run prints the four
// curves and one line per head (8), every sparkline starting at the same
// column with the same width (one step axis); each head's role and
// formation step are those recomputed from roles.jsonl (a head under the
// role threshold named diffuse with its strongest pattern); a layer-0 head is
// previous-token and a layer-1 head induction, both formed; and the
// induction head formed at the end of the evaluation interval with the
// largest drop of the held-out loss (the README's claim).
func TestRunView(t *testing.T) {
	plainEnv(t, "100")
	text := string(runOK(t, "-run", inductionRun))
	lines := strings.Split(strings.TrimSpace(text), "\n")
	var sparks []string
	heads := map[string]string{} // "L1 H3 induction" -> the rest of its line
	for i, line := range lines {
		if utf8.RuneCountInString(line) < render.SparkLabelWidth || !strings.ContainsAny(line, "▁▂▃▄▅▆▇█") {
			continue
		}
		label := []rune(line)[:render.SparkLabelWidth]
		rest := string([]rune(line)[render.SparkLabelWidth:])
		spark, note := rest, ""
		if end := strings.IndexFunc(rest, func(r rune) bool { return !strings.ContainsRune("▁▂▃▄▅▆▇█", r) }); end >= 0 {
			spark, note = rest[:end], rest[end:]
		} else if i+1 < len(lines) {
			note = lines[i+1] // a note too long for the line goes under the sparkline
		}
		sparks = append(sparks, spark)
		if name := strings.TrimSpace(string(label)); strings.HasPrefix(name, "L") {
			heads[name] = note
		}
	}
	if len(sparks) != 4+8+8+1 {
		t.Fatalf("%d sparkline rows, want 4 curves, 8 heads' roles, 8 heads' prefix matching and the ICL score:\n%s", len(sparks), text)
	}
	for i, s := range sparks {
		if n, want := utf8.RuneCountInString(s), 99-render.SparkLabelWidth-2-render.SparkNoteWidth; n != want {
			t.Errorf("sparkline %d is %d columns, want %d (99 columns less the label, the gap and the note)", i, n, want)
		}
	}
	for i, line := range lines {
		if w := utf8.RuneCountInString(line); w > 99 {
			t.Errorf("line %d is %d columns, over 99 at COLUMNS=100: %q", i, w, line)
		}
	}
	want := formationSteps(t, inductionRun)
	var prev, ind string
	for name, step := range want {
		rest, ok := heads[name]
		if !ok {
			t.Errorf("no line for %s in:\n%s", name, text)
			continue
		}
		phrase := fmt.Sprintf("formed at step %d", step)
		if step < 0 {
			phrase = "never above 0.5"
		}
		if !strings.HasSuffix(rest, phrase) {
			t.Errorf("%s: %q, want it to end %q", name, rest, phrase)
		}
		if strings.HasSuffix(name, "diffuse") && !strings.Contains(rest, "diffuse (best: ") {
			t.Errorf("%s: %q does not name its strongest pattern", name, rest)
		}
		if strings.HasPrefix(name, "L0") && strings.HasSuffix(name, "previous-token") && step > 0 {
			prev = name
		}
		if strings.HasPrefix(name, "L1") && strings.HasSuffix(name, "induction") && (ind == "" || step > 0 && step < want[ind]) {
			ind = name
		}
	}
	if prev == "" || ind == "" || want[ind] < 0 {
		t.Fatalf("no formed layer-0 previous-token and layer-1 induction heads in %v", want)
	}
	at, drop, _ := steepestFall(t)
	if at != want[ind] {
		t.Errorf("%s formed at step %d, the held-out loss fell most (by %.3f) up to step %d", ind, want[ind], drop, at)
	}
}

// steepestFall reads the committed induction run's logs and finds the
// evaluation step at which the held-out loss fell most since the one
// before, and by how much.
func steepestFall(t *testing.T) (step int, drop float64, logs *runlog.Logs) {
	t.Helper()
	logs, err := runlog.ReadLogs(inductionRun)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(logs.Eval); i++ {
		if d := logs.Eval[i-1].EvalLoss - logs.Eval[i].EvalLoss; d > drop {
			step, drop = logs.Eval[i].Step, d
		}
	}
	return step, drop, logs
}

// TestRunViewJSONAndPNG: -json prints exactly what runlog.ReadLogs reads
// (curves and head histories), -png writes a decodable chart, and neither
// may replace the run's own files.
func TestRunViewJSONAndPNG(t *testing.T) {
	var got runlog.Logs
	if err := json.Unmarshal(runOK(t, "-run", inductionRun, "-json"), &got); err != nil {
		t.Fatal(err)
	}
	want, err := runlog.ReadLogs(inductionRun)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if !bytes.Equal(a, b) || len(got.Heads) != 2 || len(got.Heads[1]) != 4 || len(got.Eval) != 60 {
		t.Errorf("-json differs from runlog.ReadLogs, or lacks the 2x4 heads and 60 evaluations")
	}
	out := filepath.Join(t.TempDir(), "run.png")
	text := string(runOK(t, "-run", inductionRun, "-png", out))
	if !strings.HasSuffix(text, "wrote "+out+"\n") {
		t.Errorf("no 'wrote' line:\n%s", text)
	}
	img := readPNG(t, out)
	// Three panels of 200 px plots, wider than the plot.
	if b := img.Bounds(); b.Dx() < 720 || b.Dy() < 3*200 {
		t.Errorf("chart of %v, want three stacked plots", b)
	}
	dir := t.TempDir()
	for _, name := range []string{"metrics.jsonl", "roles.jsonl"} {
		raw, err := os.ReadFile(filepath.Join(inductionRun, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"roles.jsonl", "metrics.jsonl", "best.safetensors"} {
		var stdout, stderr bytes.Buffer
		err := run([]string{"-run", dir, "-png", filepath.Join(dir, name)}, &stdout, &stderr)
		if err == nil || !strings.HasPrefix(err.Error(), "-png: refusing to write") || stdout.Len() > 0 {
			t.Errorf("-png over %s: %v, printed %q", name, err, stdout.String())
		}
	}
}

// TestRunViewErrors: each bad use is one line: a flag of the checkpoint
// view, a directory with no run, a bad line in roles.jsonl; a run without
// roles.jsonl still shows its curves and says why there are no heads.
func TestRunViewErrors(t *testing.T) {
	noRoles := t.TempDir()
	if err := os.WriteFile(filepath.Join(noRoles, "metrics.jsonl"), []byte(`{"step":1,"loss":2,"lr":0.1}`+"\n"+`{"step":2,"loss":1,"lr":0.1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := string(runOK(t, "-run", noRoles))
	if !strings.Contains(text, "train loss (0-3)") || !strings.Contains(text, "no roles.jsonl") {
		t.Errorf("a run without roles.jsonl:\n%s", text)
	}
	badRoles := t.TempDir()
	for name, content := range map[string]string{"metrics.jsonl": `{"step":1,"loss":2}` + "\n", "roles.jsonl": "{\"step\":1,\"heads\":[[{}]]}\n{\"step\":2}x\n"} {
		if err := os.WriteFile(filepath.Join(badRoles, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "metrics.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-run", inductionRun, "-tokens", "1 2"}, "-tokens: needs a model"},
		{[]string{"-run", inductionRun, "-ablate", "-layer", "0"}, "-ablate, -layer: needs a model"},
		{[]string{"-run", t.TempDir()}, "holds no metrics.jsonl, so no run train wrote"},
		{[]string{"-run", empty}, "no training or evaluation lines yet"},
		{[]string{"-run", badRoles}, "roles.jsonl line 2 is not a head roles record"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(c.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || stdout.Len() > 0 {
			t.Errorf("run %q: %v (printed %q), want one line containing %q", c.args, err, stdout.String(), c.want)
		}
	}
}

// TestPrefixMatchingRisesAtLossDrop: in the committed induction run
// (circuits.jsonl), the layer-1 induction head's prefix-matching score
// first passes 0.5 within one evaluation of the held-out loss's steepest
// fall, the ICL score falls with it, and inspect -run prints the head's
// final score as the file holds it.
func TestPrefixMatchingRisesAtLossDrop(t *testing.T) {
	steep, _, r := steepestFall(t)
	passed, iclBefore, iclAfter := -1, 0.0, 0.0
	for _, rec := range r.Circuits {
		if passed < 0 && rec.PrefixMatching[1][3] > 0.5 {
			passed = rec.Step
		}
		if rec.Step == steep-100 {
			iclBefore = *rec.ICL
		}
		if rec.Step == steep+100 {
			iclAfter = *rec.ICL
		}
	}
	every := r.Eval[1].Step - r.Eval[0].Step
	if passed < 0 || passed < steep-every || passed > steep+every {
		t.Errorf("L1 H3's prefix matching passes 0.5 at step %d, the loss falls most at step %d (evaluations every %d)", passed, steep, every)
	}
	if !(iclAfter < iclBefore-2) {
		t.Errorf("ICL score %v a hundred steps before the fall, %v after: want a drop of over 2 nats", iclBefore, iclAfter)
	}
	text := string(runOK(t, "-run", inductionRun))
	last := r.Circuits[len(r.Circuits)-1].PrefixMatching[1][3]
	if want := "-> " + render.Short(last); !strings.Contains(text, want) {
		t.Errorf("no %q in:\n%s", want, text)
	}
}

// TestRunViewColour: -color with -run DIR alone is refused on one line
// saying why: the run view has no colour to set.
func TestRunViewColour(t *testing.T) {
	for _, extra := range [][]string{nil, {"-tokens", "1 2"}} {
		args := append([]string{"-run", inductionRun, "-color", "always"}, extra...)
		refused(t, fmt.Sprint(args), args, "-color colours a model's heatmaps; the run view (-run DIR alone) draws its curves in plain text, with no colour to set")
	}
}
