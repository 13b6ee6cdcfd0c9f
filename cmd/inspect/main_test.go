package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/report"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/golden"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render"
)

// plainEnv fixes what colour and layout decisions read from the environment.
func plainEnv(t *testing.T, columns string) {
	t.Setenv("COLUMNS", columns)
	t.Setenv("NO_COLOR", "")
	t.Setenv("COLORTERM", "")
}

// runOK runs the command and fails the test on an error or stderr output.
func runOK(t *testing.T, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("run %q: %v", args, err)
	}
	if stderr.Len() > 0 {
		t.Errorf("run %q wrote to stderr: %s", args, stderr.String())
	}
	return stdout.Bytes()
}

func TestCheckpointIsSmall(t *testing.T) {
	info, err := os.Stat(testCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() >= 100<<10 {
		t.Errorf("%s is %d bytes, want < 100 KB", testCheckpoint, info.Size())
	}
}

// TestPlainGolden pins the default output with colour off (stdout is not a
// terminal) at 100 columns, where the two heads of a layer fit side by side.
func TestPlainGolden(t *testing.T) {
	plainEnv(t, "100")
	out := runOK(t, "-checkpoint", testCheckpoint)
	golden.Check(t, "copy.txt", out)
	if bytes.ContainsRune(out, 0x1b) {
		t.Error("plain output contains an escape character")
	}
	if !bytes.Contains(out, []byte("layer 0 head 0                         layer 0 head 1")) {
		t.Error("heads of a layer are not side by side at 100 columns")
	}
}

// TestJSONGolden pins the -json object for user tokens (a copy example whose
// second half is wrong at its last position). Every key, string and integer
// must match exactly; numbers within 1e-5 absolute plus 1e-5 relative, because
// float32 kernels may legitimately round the last digit differently (a change
// of GEMM summation order is not a change of the output). The checkpoint was
// trained on the fused path; run on the gorgonia path (-path) it must give
// the same object.
func TestJSONGolden(t *testing.T) {
	for _, path := range []string{"fused", "gorgonia"} {
		t.Run(path, func(t *testing.T) { checkJSONGolden(t, "-path", path) })
	}
}

func checkJSONGolden(t *testing.T, extra ...string) {
	out := runOK(t, append([]string{"-checkpoint", testCheckpoint, "-json", "-tokens", "5 2 7 2 8 5 2 6"}, extra...)...)
	if *golden.Update {
		golden.Check(t, "copy.json", out)
		return
	}
	want, err := os.ReadFile(filepath.Join("testdata", "copy.json"))
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/inspect/ -update to create it)", err)
	}
	var gotValue, wantValue any
	if err := json.Unmarshal(out, &gotValue); err != nil {
		t.Fatalf("-json output is not JSON: %v", err)
	}
	if err := json.Unmarshal(want, &wantValue); err != nil {
		t.Fatalf("testdata/copy.json: %v", err)
	}
	if diff := jsonDiff("$", gotValue, wantValue, 1e-5); diff != "" {
		t.Errorf("-json output differs from testdata/copy.json (-update rewrites it): %s", diff)
	}
}

// jsonDiff describes the first difference between two decoded JSON values,
// comparing numbers within tol·(1 + |want|), or returns "".
func jsonDiff(path string, got, want any, tol float64) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: got %v, want %v", path, got, want)
		}
		for key, wv := range w {
			if d := jsonDiff(path+"."+key, g[key], wv, tol); d != "" {
				return d
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: got %v, want %v", path, got, want)
		}
		for i := range w {
			if d := jsonDiff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i], tol); d != "" {
				return d
			}
		}
	case float64:
		g, ok := got.(float64)
		if !ok || math.Abs(g-w) > tol*(1+math.Abs(w)) {
			return fmt.Sprintf("%s: got %v, want %v (tolerance %g)", path, got, want, tol)
		}
	default:
		if got != want {
			return fmt.Sprintf("%s: got %v, want %v", path, got, want)
		}
	}
	return ""
}

type jsonOut struct {
	Tokens      []int
	Labels      []string
	Attention   [][][][]float64
	Logits      [][]float64
	Predictions []int
	Heads       [][]struct {
		Role    string
		Score   float64
		Scores  heads.Scores
		Entropy float64
	}
}

func decode(t *testing.T, out []byte) jsonOut {
	t.Helper()
	var j jsonOut
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&j); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Fatal("stdout holds more than one JSON value")
	}
	return j
}

// TestJSONInvariants: one JSON object; each attention row sums to 1 within
// 1e-5 and is exactly 0 above the diagonal; the logits equal a forward pass
// made here directly with model.Build + RunAll (relative 1e-6 after parsing
// the JSON number back to float32, a round trip that is exact for float32
// printed by encoding/json); predictions are the logits' argmax;
// heads are [layer][head] with scores in [0, 1].
func TestJSONInvariants(t *testing.T) {
	tokens := []int{5, 2, 7, 2, 8, 5, 2}
	out := runOK(t, "-checkpoint", testCheckpoint, "-json", "-tokens", "5,2,7,2,8,5,2")
	j := decode(t, out)
	ck, err := checkpoint.Load(testCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	m := ck.Model
	cfg := m.Config
	if len(j.Attention) != cfg.Layers || len(j.Heads) != cfg.Layers {
		t.Fatalf("%d attention layers, %d head layers, want %d", len(j.Attention), len(j.Heads), cfg.Layers)
	}
	for l, layer := range j.Attention {
		if len(layer) != cfg.Heads || len(j.Heads[l]) != cfg.Heads {
			t.Fatalf("layer %d: %d heads", l, len(layer))
		}
		for h, w := range layer {
			if len(w) != len(tokens) {
				t.Fatalf("layer %d head %d: %d rows", l, h, len(w))
			}
			for i, row := range w {
				var sum float64
				for k, v := range row {
					sum += v
					if k > i && v != 0 {
						t.Errorf("layer %d head %d: weight %v at query %d key %d above the diagonal", l, h, v, i, k)
					}
				}
				if math.Abs(sum-1) > 1e-5 {
					t.Errorf("layer %d head %d row %d sums to %v", l, h, i, sum)
				}
			}
			for p, s := range j.Heads[l][h].Scores {
				if s < 0 || s > 1 {
					t.Errorf("layer %d head %d: %s score %v outside [0, 1]", l, h, p, s)
				}
			}
		}
	}

	g, err := model.Build(m, model.BuildOptions{Batch: 1, SeqLen: len(tokens)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Feed(tokens, make([]int, len(tokens)), make([]float64, len(tokens))); err != nil {
		t.Fatal(err)
	}
	vm := g.NewMachine()
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	want := g.Logits.Value().Data().([]float32)
	for p, row := range j.Logits {
		best := 0
		for v, x := range row {
			w := float64(want[p*cfg.Vocab+v])
			if d := math.Abs(float64(float32(x)) - w); d > 1e-6*math.Max(1, math.Abs(w)) {
				t.Errorf("logit [%d][%d] = %v, direct forward pass %v", p, v, x, want[p*cfg.Vocab+v])
			}
			if x > row[best] {
				best = v
			}
		}
		if j.Predictions[p] != best {
			t.Errorf("prediction %d = %d, argmax %d", p, j.Predictions[p], best)
		}
	}
	if len(j.Logits) != len(tokens) || len(j.Predictions) != len(tokens) {
		t.Errorf("%d logit rows and %d predictions for %d tokens", len(j.Logits), len(j.Predictions), len(tokens))
	}
}

// TestPrefixIsCausal: the attention and logits of a prefix equal the first
// rows of the full sequence's (a causal model cannot see later tokens);
// tolerance 1e-6 for graphs of different T.
func TestPrefixIsCausal(t *testing.T) {
	full := decode(t, runOK(t, "-checkpoint", testCheckpoint, "-json", "-tokens", "1 6 6 0 8 1 6 6", "-examples", "1"))
	pre := decode(t, runOK(t, "-checkpoint", testCheckpoint, "-json", "-tokens", "1 6 6 0 8", "-examples", "1"))
	for l := range pre.Attention {
		for h := range pre.Attention[l] {
			for i, row := range pre.Attention[l][h] {
				for k, v := range row {
					if math.Abs(v-full.Attention[l][h][i][k]) > 1e-6 {
						t.Errorf("layer %d head %d [%d][%d]: prefix %v, full %v", l, h, i, k, v, full.Attention[l][h][i][k])
					}
				}
			}
		}
	}
	for p, row := range pre.Logits {
		for v, x := range row {
			if math.Abs(x-full.Logits[p][v]) > 1e-5 {
				t.Errorf("logit [%d][%d]: prefix %v, full %v", p, v, x, full.Logits[p][v])
			}
		}
	}
}

// TestPNG: the file decodes, has the layout's size for 2 layers x 2 heads
// (1 x 1 with -layer and -head), cells of at least 16 px, a cell's centre has
// the colour of its JSON weight, and two different heads' heatmaps differ.
func TestPNG(t *testing.T) {
	plainEnv(t, "100")
	dir := t.TempDir()
	path := filepath.Join(dir, "heads.png")
	out := runOK(t, "-checkpoint", testCheckpoint, "-png", path)
	if !bytes.Contains(out, []byte("wrote "+path)) {
		t.Errorf("output does not say it wrote %s", path)
	}
	img := readPNG(t, path)
	r, err := buildReport(report.Options{Checkpoint: testCheckpoint, Layers: report.Every, Heads: report.Every, Samples: 64, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := render.GridLayout(r.Figure())
	if err != nil {
		t.Fatal(err)
	}
	if l.Layers != 2 || l.Heads != 2 || img.Bounds().Size() != l.Size() || l.CellPx < 16 {
		t.Fatalf("image %v, layout %+v", img.Bounds(), l)
	}
	w := r.Forward.Map(0, 1)
	c := l.Cell(0, 1, 5, 1)
	centre := c.Min.Add(c.Size().Div(2))
	if got, want := rgba(img, centre), render.Color(w[5][1]); got != want {
		t.Errorf("cell (5, 1) of layer 0 head 1 is %v, want %v for weight %v", got, want, w[5][1])
	}
	if samePixels(img, l.Heatmap(0, 0), l.Heatmap(0, 1)) {
		t.Error("layer 0 heads 0 and 1 draw the same heatmap")
	}

	one := filepath.Join(dir, "one.png")
	runOK(t, "-checkpoint", testCheckpoint, "-png", one, "-layer", "1", "-head", "0", "-json")
	// One panel is narrower than the title, which wraps to it: a taller
	// title block over the same panel.
	r1, err := buildReport(report.Options{Checkpoint: testCheckpoint, Layers: report.Only(1), Heads: report.Only(0), Samples: 64, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	l1, err := render.GridLayout(r1.Figure())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readPNG(t, one).Bounds().Size(), l.Panel.Add(image.Pt(0, l1.TitleH)); got != want || l1.Panel != l.Panel {
		t.Errorf("-layer 1 -head 0 image is %v, want one panel %v under the title %v", got, l.Panel, want)
	}
	title := r.Figure().Title
	if len(title) < 2 || !strings.Contains(title[0], testCheckpoint+"  task copy  step 400") || !strings.Contains(title[1], "correct at scored positions: 4/4") {
		t.Errorf("PNG title %q", title)
	}
	p := r.Figure().Grid[0][0]
	if fmt.Sprint(p.Scored) != "[false false false false true true true true]" || !p.Separator[4] || p.Predicted[4] != r.Task.Label(r.Forward.Predictions[4]) {
		t.Errorf("panel marks: scored %v, separator %v, predicted %v", p.Scored, p.Separator, p.Predicted)
	}
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func rgba(img image.Image, p image.Point) color.RGBA {
	return color.RGBAModel.Convert(img.At(p.X, p.Y)).(color.RGBA)
}

func samePixels(img image.Image, a, b image.Rectangle) bool {
	for y := 0; y < a.Dy(); y++ {
		for x := 0; x < a.Dx(); x++ {
			if img.At(a.Min.X+x, a.Min.Y+y) != img.At(b.Min.X+x, b.Min.Y+y) {
				return false
			}
		}
	}
	return true
}

// TestColor: -color always gives 24-bit cells under COLORTERM=truecolor and
// 256-colour cells otherwise; auto into a buffer (not a terminal), NO_COLOR
// and never give no escapes at all.
func TestColor(t *testing.T) {
	args := []string{"-checkpoint", testCheckpoint, "-layer", "0", "-examples", "4"}
	for _, c := range []struct {
		color, colorterm, noColor, want string
	}{
		{"always", "truecolor", "", "\x1b[48;2;"},
		{"always", "", "", "\x1b[48;5;"},
		{"auto", "truecolor", "", ""},
		{"always", "truecolor", "1", "\x1b[48;2;"}, // an explicit -color always wins over NO_COLOR
		{"never", "truecolor", "", ""},
	} {
		plainEnv(t, "100")
		t.Setenv("COLORTERM", c.colorterm)
		t.Setenv("NO_COLOR", c.noColor)
		out := runOK(t, append(args, "-color", c.color)...)
		if c.want == "" && bytes.ContainsRune(out, 0x1b) {
			t.Errorf("-color %s: escapes in the output", c.color)
		}
		if c.want != "" && !bytes.Contains(out, []byte(c.want)) {
			t.Errorf("-color %s COLORTERM=%q: no %q in the output", c.color, c.colorterm, c.want)
		}
	}
}

// TestWidth: at 100 columns a layer's two heads share lines, at 40 they are
// stacked.
func TestWidth(t *testing.T) {
	for _, c := range []struct {
		columns string
		side    bool
	}{{"100", true}, {"40", false}} {
		plainEnv(t, c.columns)
		out := string(runOK(t, "-checkpoint", testCheckpoint, "-layer", "1", "-examples", "4"))
		side := false
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "layer 1 head 0") && strings.Contains(line, "layer 1 head 1") {
				side = true
			}
		}
		if side != c.side || !strings.Contains(out, "layer 1 head 1") || strings.Contains(out, "layer 0 head") {
			t.Errorf("COLUMNS=%s: side by side %v, want %v:\n%s", c.columns, side, c.side, out)
		}
	}
}

// TestBadInput: each bad input is one error naming the problem, with nothing
// on stdout.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.safetensors")
	if err := os.WriteFile(corrupt, []byte("this is not a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(testCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.safetensors")
	if err := os.WriteFile(truncated, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	ck := []string{"-checkpoint", testCheckpoint}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no model: give one"},
		{[]string{"-checkpoint", filepath.Join(dir, "missing.safetensors")}, "no such file"},
		{[]string{"-checkpoint", corrupt}, "corrupt.safetensors"},
		{[]string{"-checkpoint", truncated}, "truncated.safetensors"},
		{append(ck, "-tokens", "3 1 four"), `"four" (token 2) is not a number or a token name (SEP)`},
		{append(ck, "-tokens", "3 1 -1"), "token -1 at position 2 is outside the vocabulary [0, 9)"},
		{append(ck, "-tokens", "3 1 9"), "token 9 at position 2 is outside the vocabulary [0, 9)"},
		{append(ck, "-tokens", "1 2 3 4 5 6 7 0 1"), "9 tokens is longer than the model's context of 8"},
		{append(ck, "-tokens", " , "), "no token ids"},
		{append(ck, "-layer", "2"), "-layer 2 does not exist: the model has 2 layers (0..1)"},
		{append(ck, "-head", "5"), "-head 5 does not exist: the model has 2 heads per layer (0..1)"},
		{append(ck, "-layer", "-3"), `invalid value "-3" for flag -layer: -3 is negative; layers and heads count from 0; want all, a number or a list of numbers and ranges, e.g. 0,5-7`},
		{append(ck, "-layer", "0,5-7"), "-layer 0,5-7: layer 7 does not exist: the model has 2 layers (0..1)"},
		{append(ck, "-head", "3-1"), `invalid value "3-1" for flag -head: the range 3-1 runs backwards; want all`},
		{append(ck, "-head", "1,,2"), `invalid value "1,,2" for flag -head: an empty item`},
		{append(ck, "-layer", "one"), `invalid value "one" for flag -layer: "one" is not a number`},
		{append(ck, "-layer", "99999"), `invalid value "99999" for flag -layer: 99999 is past 4095`},
		{append(ck, "-color", "rainbow"), `-color "rainbow": want auto, always or never`},
		{append(ck, "-examples", "0"), "-examples 0"},
		{append(ck, "-ablate", "-ablation", "half"), `-ablation: ablation mode "half": want zero or mean`},
		{[]string{testCheckpoint, "stray"}, `unexpected argument "stray" (one model, already given as`},
		{append(ck, "stray"), `-checkpoint "testdata/copy.safetensors" and the argument "stray" name different paths`},
	} {
		var stdout, stderr bytes.Buffer
		err := run(c.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run %q: error %v, want one containing %q", c.args, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") || stdout.Len() > 0 {
			t.Errorf("run %q: multi-line error %q or stdout %q", c.args, err, stdout.String())
		}
	}
}

// TestHelp: -h prints the usage, which names the model argument, and the
// flags on stdout, nothing on stderr, and succeeds.
func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-h"}, &stdout, &stderr); err != nil {
		t.Errorf("-h: %v", err)
	}
	if !strings.HasPrefix(stdout.String(), "usage: inspect MODEL") || !strings.Contains(stdout.String(), "\n  -examples int\n") || stderr.Len() > 0 {
		t.Errorf("-h printed stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}

// TestPlain80Golden pins the default output at 80 columns: every line,
// prose included, fits without the terminal wrapping it.
func TestPlain80Golden(t *testing.T) {
	plainEnv(t, "80")
	out := runOK(t, "-checkpoint", testCheckpoint)
	golden.Check(t, "copy80.txt", out)
	for _, l := range strings.Split(string(out), "\n") {
		if n := len([]rune(l)); n >= 80 {
			t.Errorf("line of %d characters at 80 columns: %q", n, l)
		}
	}
}

// TestTokensByName: -tokens accepts the separator by the name inspect
// prints (any case), giving the same output as its id; an input laid out as
// the task's examples are is scored at the task's positions with no note.
func TestTokensByName(t *testing.T) {
	plainEnv(t, "100")
	byID := runOK(t, "-checkpoint", testCheckpoint, "-json", "-tokens", "5 2 7 2 8 5 2 7")
	for _, spelling := range []string{"5 2 7 2 SEP 5 2 7", "5,2,7,2,sep,5,2,7"} {
		if byName := runOK(t, "-checkpoint", testCheckpoint, "-json", "-tokens", spelling); !bytes.Equal(byID, byName) {
			t.Errorf("-tokens %q and the same ids by number give different output", spelling)
		}
	}
	text := string(runOK(t, "-checkpoint", testCheckpoint, "-tokens", "5 2 7 2 SEP 5 2 7"))
	if !strings.Contains(text, "scored at the positions task copy scores: 4-7") || !strings.Contains(text, "correct at scored positions: ") {
		t.Errorf("header or score line missing:\n%s", text)
	}
	if strings.Contains(text, "do not follow") {
		t.Errorf("an input laid out as the task's has a note:\n%s", text)
	}
}

// TestTokensOffTask: an input too short to reach the scored positions says
// there is nothing to score and which positions the task scores (instead of
// "0/0"); one with SEP elsewhere says it does not follow the task.
func TestTokensOffTask(t *testing.T) {
	plainEnv(t, "100")
	short := string(runOK(t, "-checkpoint", testCheckpoint, "-tokens", "5 2 SEP 5"))
	for _, want := range []string{
		"no position of the 4 tokens given is one task copy scores (4-7), so there is nothing to score",
		"note: these tokens do not follow task copy,",
		"which has SEP only at position 4 (this input differs at position 2);",
	} {
		if !strings.Contains(short, want) {
			t.Errorf("output lacks %q:\n%s", want, short)
		}
	}
	if strings.Contains(short, "0/0") {
		t.Errorf("output still claims 0/0:\n%s", short)
	}
}

// TestCheckpointDirectory: -checkpoint takes a run directory as well as a
// file; a directory without a checkpoint is named for what it is.
func TestCheckpointDirectory(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run([]string{"-checkpoint", dir}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "checkpoint "+dir+": is a directory, not a run directory (it holds no checkpoint.safetensors)") {
		t.Errorf("empty directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("seed: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = run([]string{"-checkpoint", dir}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "run directory "+dir+" holds no checkpoint.safetensors yet") {
		t.Errorf("run without a checkpoint: %v", err)
	}
	stdout.Reset()
	if err := run([]string{"-checkpoint", "../../testdata/induction", "-summary"}, &stdout, &stderr); err != nil || !strings.Contains(stdout.String(), "layer head") {
		t.Errorf("run directory: %v\n%s", err, stdout.String())
	}
}

// TestMeanHeatmaps: with -mean each panel is the mean of the head's weights
// over the -examples examples (the sequence shown the first), checked
// against the examples run one at a time (a batch-1 graph per example,
// averaged here; float32, so 1e-5), and its axes are positions with SEP
// where every example has it.
func TestMeanHeatmaps(t *testing.T) {
	const n = 3
	r, err := buildReport(report.Options{Checkpoint: testCheckpoint, Layers: report.Every, Heads: report.Every, Samples: n, Seed: 7, Mean: true})
	if err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Load(testCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	m := ck.Model
	tl := r.Task.SeqLen()
	b := data.NewBatch(n, tl)
	if err := data.Fill(r.Task, b, rand.New(rand.NewPCG(7, analysis.SamplesStream))); err != nil {
		t.Fatal(err)
	}
	// The sequence shown is the first example (report's plan).
	tokens, targets, mask := b.Row(0)
	copy(tokens, r.Sequence.Tokens)
	copy(targets, r.Sequence.Targets)
	copy(mask, r.Sequence.Scored)
	want := make([][][][]float64, r.Config.Layers)
	for i := range n {
		tokens, targets, mask := b.Row(i)
		fw, err := analysis.Forward(m, tokens, targets, mask)
		if err != nil {
			t.Fatal(err)
		}
		for l := range r.Config.Layers {
			if i == 0 {
				want[l] = make([][][]float64, r.Config.Heads)
			}
			for h := range r.Config.Heads {
				if i == 0 {
					want[l][h] = make([][]float64, tl)
					for q := range want[l][h] {
						want[l][h][q] = make([]float64, tl)
					}
				}
				for q, row := range fw.Map(l, h) {
					for k, w := range row {
						want[l][h][q][k] += w / n
					}
				}
			}
		}
	}
	for l := range r.Config.Layers {
		for h := range r.Config.Heads {
			p := r.Panel(l, h, nil)
			for q := range tl {
				for k := range tl {
					if d := math.Abs(p.Weights[q][k] - want[l][h][q][k]); d > 1e-5 {
						t.Fatalf("layer %d head %d (%d, %d): mean %v, want %v", l, h, q, k, p.Weights[q][k], want[l][h][q][k])
					}
				}
			}
			if strings.Join(p.Cols, " ") != "0 1 2 3 SEP 5 6 7" {
				t.Errorf("mean panel labels %q", p.Cols)
			}
		}
	}
	plainEnv(t, "100")
	out := string(runOK(t, "-checkpoint", testCheckpoint, "-mean", "-examples", "3", "-seed", "7"))
	if !strings.Contains(out, "heatmaps: the mean over 3 examples of copy (seed 7)") {
		t.Errorf("-mean output lacks its header:\n%s", out)
	}
}

// buildReport opens o.Checkpoint as inspect does and builds its report.
func buildReport(o report.Options) (*report.Report, error) {
	subject, err := openModel(options{r: o})
	if err != nil {
		return nil, err
	}
	return report.Build(subject, o)
}
