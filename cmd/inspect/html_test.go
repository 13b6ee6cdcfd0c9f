package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render/htmlview"
	"github.com/attnscope/attnscope/report"
	"github.com/attnscope/attnscope/runlog"
)

// testRun and testRoles are the real metrics.jsonl and roles.jsonl of a run
// of the test checkpoint's config: go run ./cmd/train -config
// configs/copy.yaml -set seed=7 -set task.length=4 -set task.symbols=8 -set
// model.d_model=16 -set model.heads=2 -set model.layers=2 -set
// train.steps=400 -set train.lr=1e-2 -set train.eval_every=50 -set
// train.eval_size=200.
const (
	testRun   = "testdata/run/metrics.jsonl"
	testRoles = "testdata/run/roles.jsonl"
)

// runDirWithCheckpoint copies the test checkpoint and the test run's metrics
// and head roles into a fresh run directory and returns the checkpoint's
// path there.
func runDirWithCheckpoint(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for src, dst := range map[string]string{testCheckpoint: "checkpoint.safetensors", testRun: runlog.MetricsFile, testRoles: runlog.RolesFile} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "checkpoint.safetensors")
}

// pageData is the page's JSON blob, decoded generically (numbers as
// json.Number, so nothing is rounded on the way).
type pageData struct {
	Graph *struct {
		Rows []struct {
			Name string `json:"name"`
		} `json:"rows"`
		Params int `json:"params"`
	} `json:"graph"`
	Inspect  map[string]any     `json:"inspect"`
	Maps     [][]string         `json:"maps"`
	Examples []map[string]any   `json:"examples"`
	Training *htmlview.Training `json:"training"`
	Params   int                `json:"params"`
}

var dataBlob = regexp.MustCompile(`(?s)<script id="data" type="application/json">(.*?)</script>`)

// blob returns the JSON inside the page's data script.
func blob(t *testing.T, page []byte) []byte {
	t.Helper()
	m := dataBlob.FindSubmatch(page)
	if m == nil {
		t.Fatal("the page has no data script")
	}
	return m[1]
}

// decodeMaps is the page's attention ([layer][head] htmlview.EncodeMap
// strings) of a sequence of n tokens as [layer][head][query][key].
func decodeMaps(t *testing.T, maps [][]string, n int) [][][][]float64 {
	t.Helper()
	out := make([][][][]float64, len(maps))
	for l, layer := range maps {
		for h, s := range layer {
			m, ok := htmlview.DecodeMap(s, n)
			if !ok {
				t.Fatalf("the page's map of layer %d head %d is not one of %d tokens", l, h, n)
			}
			out[l] = append(out[l], m)
		}
	}
	return out
}

// anyMaps is an example's "maps" decoded generically, as [][]string.
func anyMaps(ex map[string]any) [][]string {
	var out [][]string
	for _, layer := range ex["maps"].([]any) {
		var heads []string
		for _, s := range layer.([]any) {
			heads = append(heads, s.(string))
		}
		out = append(out, heads)
	}
	return out
}

func decodePage(t *testing.T, page []byte) pageData {
	t.Helper()
	var d pageData
	dec := json.NewDecoder(bytes.NewReader(blob(t, page)))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

func writePage(t *testing.T, args ...string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "page.html")
	out := runOK(t, append(args, "-html", path)...)
	if !strings.Contains(string(out), "wrote "+path) {
		t.Errorf("stdout does not say it wrote %s", path)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// TestHTMLCarriesJSON: the page's "inspect" member is exactly the object
// -json prints for the same flags (every number, compared as its decimal
// text) but for its attention, which the page's maps carry: every weight
// of every head the same float32; with a drawn example, and with -tokens
// and -ablate (the ablation table).
func TestHTMLCarriesJSON(t *testing.T) {
	for _, extra := range [][]string{nil, {"-tokens", "5 2 7 2 8 5 2 6", "-seed", "3", "-examples", "9", "-ablate"}} {
		args := append([]string{"-checkpoint", testCheckpoint}, extra...)
		page := decodePage(t, writePage(t, args...))
		var want map[string]any
		dec := json.NewDecoder(bytes.NewReader(runOK(t, append(args, "-json")...)))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if _, ok := page.Inspect["attention"]; ok {
			t.Errorf("%q: the page carries the attention twice, in inspect and in maps", extra)
		}
		checkMaps(t, fmt.Sprint(extra), decodeMaps(t, page.Maps, len(want["tokens"].([]any))), want["attention"])
		delete(want, "attention")
		if !reflect.DeepEqual(page.Inspect, want) {
			t.Errorf("%q: the page's inspect data differs from -json", extra)
		}
		if _, ok := page.Inspect["ablation"]; ok != (extra != nil) {
			t.Errorf("%q: the page has an ablation table: %v", extra, ok)
		}
		// Parameters by hand: embeddings 9x16 + 8x16, per layer qkv 48x16 and
		// out 16x16 + 16, LM head 9x16.
		if want := 9*16 + 8*16 + 2*(48*16+16*16+16) + 9*16; page.Params != want {
			t.Errorf("%q: %d parameters, want %d", extra, page.Params, want)
		}
		// The graph summary names the nodes -graph prints, in its order.
		var names []string
		for _, line := range strings.Split(string(runOK(t, "-checkpoint", testCheckpoint, "-graph")), "\n") {
			if f := strings.Fields(line); len(f) > 1 && regexp.MustCompile(`^[0-9]+$`).MatchString(f[0]) {
				names = append(names, f[1])
			}
		}
		if page.Graph == nil {
			t.Fatalf("%q: no graph summary", extra)
		}
		var got []string
		for _, r := range page.Graph.Rows {
			got = append(got, r.Name)
		}
		if len(names) == 0 || !reflect.DeepEqual(got, names) || page.Graph.Params != page.Params {
			t.Errorf("%q: graph nodes %q (%d parameters), -graph prints %q (%d)", extra, got, page.Graph.Params, names, page.Params)
		}
	}
}

// TestHTMLHeldOutExamples: the page embeds min(-examples, 16) examples (16 at
// the default -examples 64), the first rows of the run's held-out set
// (data.EvalSet of the checkpoint's seed 7), and each one's attention and
// predictions equal what -json gives for those tokens on their own (1e-6:
// graphs of batch n and batch 1).
func TestHTMLHeldOutExamples(t *testing.T) {
	ck, err := checkpoint.Load(testCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	m := ck.Model
	for _, c := range []struct {
		samples []string
		want    int
	}{{[]string{"-examples", "3"}, 3}, {[]string{"-examples", "300"}, report.MaxPageExamples}, {nil, report.MaxPageExamples}} {
		page := decodePage(t, writePage(t, append([]string{"-checkpoint", testCheckpoint}, c.samples...)...))
		if len(page.Examples) != c.want {
			t.Errorf("%q: %d examples, want %d", c.samples, len(page.Examples), c.want)
		}
		if c.want != 3 {
			continue
		}
		task, err := data.New(data.TaskConfig{Name: "copy", Length: 4, Symbols: 8})
		if err != nil {
			t.Fatal(err)
		}
		set := data.EvalSet(task, len(page.Examples), 7)
		for i, ex := range page.Examples {
			tokens, _, _ := set.Row(i)
			var ids []string
			for j, id := range tokens {
				ids = append(ids, strconv.Itoa(id))
				if got := ex["tokens"].([]any)[j].(json.Number).String(); got != strconv.Itoa(id) {
					t.Fatalf("example %d token %d = %s, held-out set has %d", i, j, got, id)
				}
			}
			alone := decode(t, runOK(t, "-checkpoint", testCheckpoint, "-json", "-examples", "1", "-tokens", strings.Join(ids, " ")))
			att := decodeMaps(t, anyMaps(ex), len(tokens))
			for l := range m.Config.Layers {
				for h := range m.Config.Heads {
					for q, row := range att[l][h] {
						for k, got := range row {
							if d := math.Abs(got - alone.Attention[l][h][q][k]); d > 1e-6 {
								t.Errorf("example %d layer %d head %d [%d][%d] = %v, alone %v", i, l, h, q, k, got, alone.Attention[l][h][q][k])
							}
						}
					}
				}
			}
			for p, v := range ex["predictions"].([]any) {
				if v.(json.Number).String() != strconv.Itoa(alone.Predictions[p]) {
					t.Errorf("example %d prediction %d = %s, alone %d", i, p, v, alone.Predictions[p])
				}
			}
		}
	}
	if m.Dtype != tensor.Float32 {
		t.Errorf("test checkpoint dtype %v, the float32 printing above assumes float32", m.Dtype)
	}
}

// checkMaps compares the page's maps with -json's attention (decoded with
// json.Number): the same float32 at every weight.
func checkMaps(t *testing.T, what string, maps [][][][]float64, attention any) {
	t.Helper()
	att := attention.([]any)
	if len(maps) != len(att) {
		t.Fatalf("%s: the page has maps of %d layers, -json %d", what, len(maps), len(att))
	}
	for l, layer := range att {
		for h, head := range layer.([]any) {
			for q, row := range head.([]any) {
				for k, v := range row.([]any) {
					want, err := strconv.ParseFloat(v.(json.Number).String(), 32)
					if err != nil {
						t.Fatal(err)
					}
					if got := maps[l][h][q][k]; float32(got) != float32(want) {
						t.Errorf("%s: layer %d head %d [%d][%d] is %v on the page, %v in -json", what, l, h, q, k, got, want)
					}
				}
			}
		}
	}
}

// TestHTMLTraining: beside a run's metrics.jsonl the page carries every
// training and evaluation line's numbers and, from roles.jsonl, each head's
// strongest role through training; -run names the directory explicitly;
// without one there is no training member, and without roles.jsonl no head
// roles.
func TestHTMLTraining(t *testing.T) {
	ck := runDirWithCheckpoint(t)
	var train, eval int
	var first runlog.TrainRecord // decoded by encoding/json alone
	var last runlog.EvalRecord
	raw, err := os.ReadFile(testRun)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec map[string]float64
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if _, ok := rec["eval_loss"]; ok {
			eval++
			if err := json.Unmarshal([]byte(line), &last); err != nil {
				t.Fatal(err)
			}
		} else {
			if train == 0 {
				if err := json.Unmarshal([]byte(line), &first); err != nil {
					t.Fatal(err)
				}
			}
			train++
		}
	}
	want, err := runlog.ReadLogs(filepath.Dir(ck))
	if err != nil {
		t.Fatal(err)
	}
	lastRoles := lastRolesLine(t)
	for _, args := range [][]string{{"-checkpoint", ck}, {"-checkpoint", testCheckpoint, "-run", filepath.Dir(ck)}} {
		page := writePage(t, args...)
		tr := decodePage(t, page).Training
		if tr == nil {
			t.Fatalf("%q: no training data", args)
		}
		if len(tr.Train) != train || len(tr.Eval) != eval || tr.Stride != 1 {
			t.Errorf("%q: %d training and %d evaluation points (stride %d), want %d and %d", args, len(tr.Train), len(tr.Eval), tr.Stride, train, eval)
			continue
		}
		if tr.Train[0] != first || tr.Eval[eval-1] != last {
			t.Errorf("%q: first training point %+v, last evaluation %+v; want %+v and %+v", args, tr.Train[0], tr.Eval[eval-1], first, last)
		}
		// The head roles through training: runlog's reading of roles.jsonl,
		// a point per evaluation, each head ending on its best score of the
		// file's last line.
		got := pageRoleHistories(t, page)
		if !reflect.DeepEqual(got, want.Heads) {
			t.Errorf("%q: the page's head roles through training differ from runlog.ReadLogs'", args)
		}
		if len(got) != 2 || len(got[0]) != 2 {
			t.Fatalf("%q: head roles of %d layers, want 2 x 2 heads", args, len(got))
		}
		for l, layer := range got {
			for h, hist := range layer {
				best := slices.Max(slices.Collect(maps.Values(lastRoles[l][h])))
				if len(hist.Steps) != eval || hist.Scores[eval-1] != best {
					t.Errorf("%q: layer %d head %d has %d points ending at %v, want %d ending at the best last score %v", args, l, h, len(hist.Steps), hist.Scores[len(hist.Scores)-1], eval, best)
				}
			}
		}
	}
	if tr := decodePage(t, writePage(t, "-checkpoint", testCheckpoint)).Training; tr != nil {
		t.Errorf("no run directory, but the page has training data %+v", tr)
	}
	// A run without roles.jsonl (no evaluation, or an older run) has curves
	// and no head roles.
	noRoles := filepath.Dir(runDirWithCheckpoint(t))
	if err := os.Remove(filepath.Join(noRoles, runlog.RolesFile)); err != nil {
		t.Fatal(err)
	}
	page := writePage(t, "-checkpoint", filepath.Join(noRoles, "checkpoint.safetensors"))
	if tr := decodePage(t, page).Training; tr == nil || len(tr.Eval) != eval || pageRoleHistories(t, page) != nil {
		t.Errorf("a run without roles: training %+v", tr)
	}
}

// pageRoleHistories is the page's training.heads.
func pageRoleHistories(t *testing.T, page []byte) [][]runlog.HeadHistory {
	t.Helper()
	var d struct {
		Training struct {
			Heads [][]runlog.HeadHistory `json:"heads"`
		} `json:"training"`
	}
	if err := json.Unmarshal(blob(t, page), &d); err != nil {
		t.Fatal(err)
	}
	return d.Training.Heads
}

// lastRolesLine is the last record of the test run's roles.jsonl, decoded
// here without package runlog.
func lastRolesLine(t *testing.T) [][]map[string]float64 {
	t.Helper()
	raw, err := os.ReadFile(testRoles)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	var rec struct{ Heads [][]map[string]float64 }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Heads
}

// TestHTMLIsSelfContained: nothing in the page names a URL or loads a file:
// no http:// or https:// anywhere, no src or href attribute at all, no
// @import or url() but a same-page #fragment.
func TestHTMLIsSelfContained(t *testing.T) {
	page := string(writePage(t, "-checkpoint", runDirWithCheckpoint(t)))
	for _, bad := range []string{"http://", "https://", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
	if m := regexp.MustCompile(`(?i)\b(src|href|xlink:href)\s*=`).FindString(page); m != "" {
		t.Errorf("the page has a %s attribute", m)
	}
	for _, m := range regexp.MustCompile(`url\(([^)]*)\)`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[1], "#") {
			t.Errorf("the page loads %s", m[0])
		}
	}
	if strings.Contains(page, `"//`) || strings.Contains(page, `'//`) {
		t.Error("the page holds a protocol-relative URL")
	}
}

// TestHTMLSizeAtDefaults: the pages of models of the copy and sort configs
// (configs/*.yaml at their defaults) are under 2 MB. The size follows from
// the config (how many values are embedded); the weights change only how long
// each number prints (the trained copy model's page, with its run's curves
// and head roles, measured 226 KB against this untrained one's 219 KB
// without them).
func TestHTMLSizeAtDefaults(t *testing.T) {
	for _, c := range []struct {
		name string
		task data.TaskConfig
		cfg  model.Config
	}{
		{"copy", data.TaskConfig{Name: "copy", Length: 8, Symbols: 16}, model.Config{DModel: 32, Heads: 4, Layers: 1, OutBias: true}},
		{"sort", data.TaskConfig{Name: "sort", Length: 8, Symbols: 16}, model.Config{DModel: 64, Heads: 4, Layers: 2, MLP: true, DFF: 256, OutBias: true}},
	} {
		task, err := data.New(c.task)
		if err != nil {
			t.Fatal(err)
		}
		c.cfg.Vocab, c.cfg.Context = task.Vocab(), task.SeqLen()
		ck := newCheckpoint(t, c.cfg, c.task)
		page := writePage(t, "-checkpoint", ck)
		t.Logf("%s: %d bytes, %d held-out examples", c.name, len(page), len(decodePage(t, page).Examples))
		if len(page) >= 2<<20 {
			t.Errorf("%s: the page is %d bytes, want < 2 MB", c.name, len(page))
		}
	}
}

// TestHTMLRefuses: -html never replaces an input, a file of the run or a
// non-regular file (a symlink, a device, a directory), and says so before
// computing anything; a bad metrics file is one error naming its line, the
// head roles of another model's run one naming both shapes; -run without
// -html is an error.
func TestHTMLRefuses(t *testing.T) {
	ck := runDirWithCheckpoint(t)
	dir := filepath.Dir(ck)
	before, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	sameFile := filepath.Join(dir, ".", "..", filepath.Base(dir), "checkpoint.safetensors")
	runFiles := map[string][]byte{"config.yaml": []byte("seed: 7\n"), "best.safetensors": before, "state-400.safetensors": before}
	for name, content := range runFiles {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "page.html")
	if err := os.Symlink(filepath.Join(dir, "best.safetensors"), link); err != nil {
		t.Fatal(err)
	}
	badRun := t.TempDir()
	if err := os.WriteFile(filepath.Join(badRun, runlog.MetricsFile), []byte("{\"step\":1,\"loss\":2}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-checkpoint", ck, "-html", ck}, "it is the input"},
		{[]string{"-checkpoint", ck, "-html", sameFile}, "it is the input"},
		{[]string{"-checkpoint", ck, "-html", filepath.Join(dir, runlog.MetricsFile)}, "it is the input"},
		{[]string{"-checkpoint", ck, "-html", filepath.Join(dir, "config.yaml")}, "config.yaml is a file of a training run"},
		{[]string{"-checkpoint", ck, "-html", filepath.Join(dir, "best.safetensors")}, "best.safetensors is a file of a training run"},
		{[]string{"-checkpoint", ck, "-html", filepath.Join(dir, "state-400.safetensors")}, "state-400.safetensors is a file of a training run"},
		{[]string{"-checkpoint", ck, "-html", link}, "it is a symlink, not a regular file"},
		{[]string{"-checkpoint", ck, "-html", os.DevNull}, "not a regular file"},
		{[]string{"-checkpoint", ck, "-html", dir}, "not a regular file"},
		{[]string{"-checkpoint", ck, "-html", filepath.Join(dir, "out.html"), "-run", badRun}, "metrics.jsonl line 2"},
		{[]string{"-checkpoint", ck, "-html", filepath.Join(dir, "out.html"), "-run", t.TempDir()}, "holds no metrics.jsonl, so no run train wrote"},
		{[]string{"-checkpoint", ck, "-html", filepath.Join(dir, "out.html"), "-run", filepath.Join("..", "..", "testdata", "induction")}, "config.yaml differs from the checkpoint's config (model.context: config.yaml 24, checkpoint 8; model.d_model: config.yaml 32, checkpoint 16; model.heads: config.yaml 4, checkpoint 2; and 6 more)"},
		{[]string{"-checkpoint", ck, "-run", dir}, "-run: only the -html page"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(c.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("run %q: error %v, want one line containing %q", c.args, err, c.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("run %q printed %q", c.args, stdout.String())
		}
	}
	after, err := os.ReadFile(ck)
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("the checkpoint changed (%v)", err)
	}
	for name, content := range runFiles {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, content) {
			t.Errorf("%s changed (%v)", name, err)
		}
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink %s was replaced (%v)", link, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.html")); !os.IsNotExist(err) {
		t.Errorf("a refused run left out.html behind (%v)", err)
	}
}
