package report

import (
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// TestRoundUp: the loss scale's top is a round number above the highest loss.
func TestRoundUp(t *testing.T) {
	for _, c := range []struct{ v, want float64 }{{2.83, 3}, {3.473, 4}, {0.042, 0.05}, {1, 1.5}, {9.5, 10}} {
		if got := roundUp(c.v); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("roundUp(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

// runDir writes a run directory holding metrics and, unless "", a config
// of task, and returns it.
func runDir(t *testing.T, task, metrics string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{runlog.MetricsFile: metrics}
	if task != "" {
		files[rundir.ConfigFile] = "task: " + task + "\n"
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// rowsOf are the sparkline rows of the view by label, and the chart's
// series by panel title and name.
func rowsOf(t *testing.T, dirs ...string) (map[string]render.SparkRow, map[string]render.Series) {
	t.Helper()
	runs, err := ReadRuns(dirs)
	if err != nil {
		t.Fatal(err)
	}
	rows, series := map[string]render.SparkRow{}, map[string]render.Series{}
	for _, sec := range runs.Text().Sections {
		for _, r := range sec.Rows {
			rows[r.Label] = r
		}
	}
	for _, p := range runs.Chart().Panels {
		for _, s := range p.Series {
			series[p.Title+": "+s.Name] = s
		}
	}
	return rows, series
}

const lengthsMetrics = `{"step":10,"loss":2,"lr":0.1}
{"step":10,"eval_loss":1.5,"token_acc":0.5,"seq_acc":0.25}
{"step":10,"eval_length":16,"eval_loss":2.5,"token_acc":0.14,"seq_acc":0}
{"step":10,"eval_length":12,"eval_loss":2,"token_acc":0.28,"seq_acc":0.01}
{"step":20,"eval_loss":1,"token_acc":0.75,"seq_acc":0.5}
{"step":20,"eval_length":16,"eval_loss":2.25,"token_acc":0.2,"seq_acc":0.02}
{"step":20,"eval_length":12,"eval_loss":1.75,"token_acc":0.3,"seq_acc":0.03}
`

// TestRunLengths: the evaluations at train.eval_lengths are drawn, one
// token accuracy and one exact match a length, shortest first, in the
// terminal view, the -png chart and, tagged, the comparison of runs.
func TestRunLengths(t *testing.T) {
	dir := runDir(t, "", lengthsMetrics)
	rows, series := rowsOf(t, dir)
	for _, c := range []struct {
		name string
		want []float64
	}{
		{"length 12 token accuracy", []float64{0.28, 0.3}},
		{"length 12 exact match", []float64{0.01, 0.03}},
		{"length 16 token accuracy", []float64{0.14, 0.2}},
		{"length 16 exact match", []float64{0, 0.02}},
	} {
		if got := rows[c.name].Y; !slices.Equal(got, c.want) {
			t.Errorf("row %q: %v, want %v", c.name, got, c.want)
		}
		if got := series[lengthsHeading+": "+c.name].Y; !slices.Equal(got, c.want) {
			t.Errorf("-png series %q: %v, want %v", c.name, got, c.want)
		}
	}
	if got := rows[exactName].Y; !slices.Equal(got, []float64{0.25, 0.5}) {
		t.Errorf("the exact match at the trained length %v took in other lengths' lines", got)
	}
	rows, series = rowsOf(t, dir, runDir(t, "", lengthsMetrics))
	if rows["b length 16 token accuracy"].Y == nil || series["held-out accuracy: a length 12 token accuracy"].Y == nil {
		t.Errorf("the comparison lacks the lengths' curves: rows %v", slices.Sorted(maps.Keys(rows)))
	}
}

// TestRunLanguageModel: a text run shows its held-out bits per character
// (a text read through a tokenizer, per token) in place of the exact match
// of whole windows, which means nothing for a language model.
func TestRunLanguageModel(t *testing.T) {
	metrics := "{\"step\":10,\"eval_loss\":2,\"token_acc\":0.4,\"seq_acc\":0}\n"
	for _, c := range []struct {
		task, bits string
	}{
		{`{name: text, path: text.txt, length: 16, chars: "ab"}`, "held-out bits/char"},
		{`{name: text, path: text.txt, length: 16}`, "held-out bits/token"},
		{`{name: copy, length: 4, symbols: 8}`, ""},
	} {
		rows, series := rowsOf(t, runDir(t, c.task, metrics))
		_, exact := rows[exactName]
		if exact != (c.bits == "") {
			t.Errorf("task %s: exact match shown %v", c.task, exact)
		}
		if c.bits == "" {
			continue
		}
		if got := rows[c.bits].Y; len(got) != 1 || math.Abs(got[0]-2/math.Ln2) > 1e-12 {
			t.Errorf("task %s: %s %v, want the loss in bits %v", c.task, c.bits, got, 2/math.Ln2)
		}
		if len(series) == 0 || series["held-out accuracy: "+exactName].Y != nil {
			t.Errorf("task %s: the chart draws exact match", c.task)
		}
	}
}
