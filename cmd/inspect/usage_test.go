package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/report"
)

// TestWrongKinds: a path of the wrong kind, and a flag that would be
// ignored or cannot do what it says, get one line saying what to pass
// instead.
func TestWrongKinds(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte("seed: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused(t, "a config as -checkpoint", []string{"-checkpoint", config}, "is a run config, not a checkpoint; train from it (go run ./cmd/train -config "+config+")")
	refused(t, "a checkpoint as -run", []string{"-run", testCheckpoint}, "-run "+testCheckpoint+": is a checkpoint file; -run takes its run directory (-run testdata)")
	refused(t, "a file as -run", []string{"-run", config}, "-run "+config+": is a file; -run takes a run directory")
	model := filepath.Join("..", "..", "open", "hf", "testdata", "distil")
	refused(t, "a model's directory as -run", []string{"-run", model}, "-run "+model+": holds no metrics.jsonl, so no run train wrote")
	refused(t, "-ablation without -ablate", []string{"-checkpoint", testCheckpoint, "-ablation", "mean"}, "-ablation is used only with -ablate")
	refused(t, "empty -tokens", []string{"-checkpoint", testCheckpoint, "-tokens", " "}, "-tokens is empty")
	// refused adds a -png of its own, so this one runs directly.
	var out bytes.Buffer
	jpg := filepath.Join(dir, "x.jpg")
	msgtest.Refusal(t, "-png of another format", run([]string{"-checkpoint", testCheckpoint, "-png", jpg}, &out, &out), "writes a PNG image; give a file name ending in .png")
	msgtest.Refusal(t, "-mean with -summary", run([]string{"-checkpoint", testCheckpoint, "-mean", "-summary"}, &out, &out), "-mean draws the heatmaps as means, and -summary shows no heatmap")
	if _, err := os.Stat(jpg); !os.IsNotExist(err) {
		t.Errorf("-png x.jpg wrote the file (%v)", err)
	}
	refused(t, "-summary with -json", []string{"-checkpoint", testCheckpoint, "-summary", "-json"}, "-summary prints the heads' table alone")
	refused(t, "a mistyped flag", []string{"-checkpont", testCheckpoint}, "(did you mean -checkpoint?)")
	refused(t, "-html with another run's directory", []string{"-checkpoint", testCheckpoint, "-html", filepath.Join(dir, "x.html"), "-run", "../../testdata/induction"},
		"-run ../../testdata/induction is another run; pass the checkpoint's own run directory: ../../testdata/induction/config.yaml differs from the checkpoint's config (model.context: config.yaml 24, checkpoint 8;", "and 6 more)")
	// A model trained elsewhere has no run config to compare (it was
	// compared with a made-up one): any run's is another's.
	hfDir := filepath.Join("..", "..", "open", "hf", "testdata", "llama")
	msgtest.Refusal(t, "-html of a model trained elsewhere with a run's directory", run([]string{hfDir, "-html", filepath.Join(dir, "y.html"), "-run", "../../testdata/induction"}, io.Discard, io.Discard),
		"-run ../../testdata/induction is another run; pass the checkpoint's own run directory: "+hfDir+" is a model trained elsewhere (Hugging Face LlamaForCausalLM), which no run here trained")
}

// TestCompareRuns: several -run draw every run's curves on one step axis
// and one scale per curve (each sparkline as wide as the others, tagged a
// and b, both titles printed), -json prints one object per run, and
// -checkpoint takes only one -run.
func TestCompareRuns(t *testing.T) {
	plainEnv(t, "100")
	other := filepath.Join("testdata", "run")
	text := string(runOK(t, "-run", inductionRun, "-run", other))
	for _, want := range []string{"a: run " + inductionRun + ": steps", "b: run " + other + ": steps", "a held-out loss (0-", "b held-out loss (0-", "a: heads", "a L1 H3 induction"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
	// Every curve and head line has its sparkline in the same columns: the
	// value after it starts right after the 45 columns (99 less the label,
	// the gap and the note) and two spaces.
	const spark = 99 - render.SparkLabelWidth - 2 - render.SparkNoteWidth
	lines := 0
	for _, line := range strings.Split(text, "\n") {
		r := []rune(line)
		if !strings.HasPrefix(line, "a ") && !strings.HasPrefix(line, "b ") || len(r) < render.SparkLabelWidth+spark+3 {
			continue
		}
		lines++
		if string(r[render.SparkLabelWidth+spark:render.SparkLabelWidth+spark+2]) != "  " || r[render.SparkLabelWidth+spark+2] == ' ' {
			t.Errorf("line %q: the sparkline is not %d columns from column %d", line, spark, render.SparkLabelWidth)
		}
	}
	if lines < 8 {
		t.Errorf("%d curve and head lines, want 8 curves and the heads", lines)
	}
	var runs []struct {
		Dir  string `json:"dir"`
		Eval []any  `json:"eval"`
	}
	if err := json.Unmarshal(runOK(t, "-run", inductionRun, "-run", other, "-json"), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Dir != inductionRun || runs[1].Dir != other || len(runs[0].Eval) == 0 {
		t.Errorf("-json: %d runs %+v", len(runs), runs)
	}
	refused(t, "-checkpoint with two runs and no page", []string{"-checkpoint", testCheckpoint, "-run", inductionRun, "-run", other},
		"with a model, several -run are drawn only on the -html page")

	// On the page: the checkpoint's run, and the other run's held-out curves.
	page := filepath.Join(t.TempDir(), "x.html")
	runOK(t, "-checkpoint", inductionCheckpoint, "-html", page, "-run", inductionRun, "-run", other)
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Training struct{ Dir string } `json:"training"`
		Compare  []struct {
			Dir  string `json:"dir"`
			Eval []any  `json:"eval"`
		} `json:"compare"`
	}
	if err := json.Unmarshal(blob(t, raw), &d); err != nil {
		t.Fatal(err)
	}
	if d.Training.Dir != inductionRun || len(d.Compare) != 1 || d.Compare[0].Dir != other || len(d.Compare[0].Eval) == 0 {
		t.Errorf("page plots %q and compares %+v; want %s and %s", d.Training.Dir, d.Compare, inductionRun, other)
	}
}

// TestFileOutputsPrintTheTable: with -png, the terminal gets the model, the
// heads' table and where the file went, not the heatmaps again.
func TestFileOutputsPrintTheTable(t *testing.T) {
	png := filepath.Join(t.TempDir(), "heads.png")
	text := string(runOK(t, "-checkpoint", testCheckpoint, "-png", png, "-color", "never"))
	if !strings.Contains(text, "layer head  role") || !strings.HasSuffix(text, "wrote "+png+"\n") || strings.Contains(text, "sequence (") || strings.Contains(text, "@") {
		t.Errorf("-png printed:\n%s", text)
	}
}

// TestWideVocabularyLogits: past report.MaxLogitValues logits a sequence's -json
// carries each position's top 16 logits (largest first, the prediction
// first) and its log-sum-exp instead of every logit, and says why in
// numbers (logits_cut: top_k, vocab, positions, limit); with
// -all-logits it carries every one, and the cut's numbers are those of the
// full logits (top values within float32 printing, 1e-5 relative;
// log-sum-exp within 1e-4).
func TestWideVocabularyLogits(t *testing.T) {
	cfg := model.Config{Vocab: 5000, Context: 16, DModel: 8, Heads: 2, Layers: 1, OutBias: true}
	m, err := model.New(cfg, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params { // spread the logits so the top is well defined
		for i := range p.Value.Float32s() {
			p.Value.Float32s()[i] *= 50
		}
	}
	ck := saveCheckpoint(t, filepath.Join(t.TempDir(), "wide.safetensors"), m, data.TaskConfig{Name: "copy", Length: 8, Symbols: 4999})
	type entry struct {
		ID    int     `json:"id"`
		Logit float64 `json:"logit"`
	}
	var cut struct {
		Logits [][]float64 `json:"logits"`
		Top    [][]entry   `json:"logits_top"`
		LSE    []float64   `json:"logits_lse"`
		Cut    struct {
			TopK      int `json:"top_k"`
			Vocab     int `json:"vocab"`
			Positions int `json:"positions"`
			Limit     int `json:"limit"`
		} `json:"logits_cut"`
		Predictions []int `json:"predictions"`
	}
	if err := json.Unmarshal(runOK(t, "-checkpoint", ck, "-json", "-examples", "1"), &cut); err != nil {
		t.Fatal(err)
	}
	if cut.Logits != nil || len(cut.Top) != 16 || len(cut.Top[0]) != 16 || len(cut.LSE) != 16 || cut.Cut.TopK != 16 || cut.Cut.Vocab != 5000 || cut.Cut.Positions != 16 || cut.Cut.Limit != report.MaxLogitValues {
		t.Fatalf("cut JSON: %d logit rows, %d top rows, %d lse, cut %+v", len(cut.Logits), len(cut.Top), len(cut.LSE), cut.Cut)
	}
	var full struct {
		Logits [][]float64 `json:"logits"`
	}
	if err := json.Unmarshal(runOK(t, "-checkpoint", ck, "-json", "-examples", "1", "-all-logits"), &full); err != nil {
		t.Fatal(err)
	}
	for p, row := range full.Logits {
		if cut.Top[p][0].ID != cut.Predictions[p] {
			t.Errorf("position %d: top logit id %d, prediction %d", p, cut.Top[p][0].ID, cut.Predictions[p])
		}
		maxv := row[0]
		for _, v := range row {
			maxv = math.Max(maxv, v)
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(v - maxv)
		}
		if lse := maxv + math.Log(sum); math.Abs(lse-cut.LSE[p]) > 1e-4 {
			t.Errorf("position %d: log-sum-exp %v, want %v", p, cut.LSE[p], lse)
		}
		for k, e := range cut.Top[p] {
			if math.Abs(row[e.ID]-e.Logit) > 1e-5*math.Abs(e.Logit) || k > 0 && e.Logit > cut.Top[p][k-1].Logit {
				t.Errorf("position %d: top entry %d %+v (full logit %v)", p, k, e, row[e.ID])
			}
		}
	}
}

// TestRunViewEdges: a run whose losses are all 0 or below still draws
// (-png), a run of one step at the largest int64 steps still gets an axis,
// and a roles log of more head maps than any run writes is refused.
func TestRunViewEdges(t *testing.T) {
	write := func(metrics, roles string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(metrics), 0o644); err != nil {
			t.Fatal(err)
		}
		if roles != "" {
			if err := os.WriteFile(filepath.Join(dir, "roles.jsonl"), []byte(roles), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	zero := write(`{"step":1,"loss":0,"lr":0}`+"\n"+`{"step":2,"loss":-1,"lr":0}`+"\n", "")
	runOK(t, "-run", zero, "-png", filepath.Join(t.TempDir(), "zero.png"))
	edge := write(`{"step":9223372036854775806,"loss":1,"lr":0}`+"\n", "")
	runOK(t, "-run", edge, "-png", filepath.Join(t.TempDir(), "edge.png"))
	line := `{"step":1,"heads":[[` + strings.Repeat(`{},`, 4095) + `{}]]}` + "\n"
	var many strings.Builder
	for i := 0; i < 300; i++ {
		many.WriteString(strings.Replace(line, `"step":1`, fmt.Sprintf(`"step":%d`, i+1), 1))
	}
	refused(t, "a roles log of too many head maps", []string{"-run", write(`{"step":1,"loss":1,"lr":0}`+"\n", many.String())}, "more than 1048576 head score maps in all")
}

// TestCircuitsView: -circuits prints each head's prefix-matching and
// copying scores and the strongest compositions, the layer-0
// previous-token head into the layer-1 induction head first, and the tokens
// the heads adding most raise, the induction head first; -json carries
// the same numbers as analysis.Measure.
func TestCircuitsView(t *testing.T) {
	text := string(runOK(t, "-checkpoint", inductionCheckpoint, "-circuits", "-summary", "-color", "never"))
	for _, want := range []string{"layer head     prefix copying  diagonal     logit  patched", "    1    3      0.869   1.000     1.000   +12.", "activation patching: ", "for the 5 adding most: L1 H3 ", "in-context learning: the copy's", "score -14.", "depth      accuracy     log p     logit\nembed ", "block 1       0.998", "from    to           Q      K      V\nL0 H1   L1 H3 "} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
	var j struct {
		Circuits struct {
			PrefixMatching [][]float64 `json:"prefix_matching"`
			Copying        []struct {
				Layer, Head int
				Score       float64
			} `json:"copying"`
			ICL struct {
				Score float64 `json:"score"`
				Pairs int     `json:"pairs"`
			} `json:"icl"`
			Lens []struct {
				Depth    int     `json:"depth"`
				Accuracy float64 `json:"accuracy"`
			} `json:"logit_lens"`
		} `json:"circuits"`
	}
	if err := json.Unmarshal(runOK(t, "-checkpoint", inductionCheckpoint, "-circuits", "-json"), &j); err != nil {
		t.Fatal(err)
	}
	c := j.Circuits
	if len(c.PrefixMatching) != 2 || len(c.Copying) != 8 || c.PrefixMatching[1][3] < 0.8 || c.ICL.Score > -2.5 || c.ICL.Pairs == 0 ||
		len(c.Lens) != 3 || c.Lens[2].Depth != 2 || c.Lens[2].Accuracy < 0.95 {
		t.Errorf("-json circuits: %+v", j.Circuits)
	}
}

// TestCircuitsPNG: with -circuits the PNG holds the heads' grid and, under
// it, the circuit tables: exactly the grid's pixels on top and the tables
// below, as tall as render.Scores draws them.
func TestCircuitsPNG(t *testing.T) {
	plainEnv(t, "100")
	dir := t.TempDir()
	plain, circ := filepath.Join(dir, "plain.png"), filepath.Join(dir, "circuits.png")
	runOK(t, "-checkpoint", inductionCheckpoint, "-png", plain)
	runOK(t, "-checkpoint", inductionCheckpoint, "-png", circ, "-circuits")
	a, b := readPNG(t, plain), readPNG(t, circ)
	r, err := buildReport(report.Options{Checkpoint: inductionCheckpoint, Layers: report.Every, Heads: report.Every, Samples: 64, Seed: 1, Circuits: true})
	if err != nil {
		t.Fatal(err)
	}
	tables, err := render.CircuitImages(*r.CircuitsView())
	if err != nil {
		t.Fatal(err)
	}
	below := 0
	for _, tb := range tables {
		below += tb.Bounds().Dy()
	}
	if len(tables) != 3 || b.Bounds().Dy() != a.Bounds().Dy()+below || !agreeIn(a, b, a.Bounds()) {
		t.Errorf("%d tables; plain %v, with circuits %v (tables %d px)", len(tables), a.Bounds(), b.Bounds(), below)
	}
}

// agreeIn reports whether two images have the same pixels inside rect.
func agreeIn(a, b image.Image, rect image.Rectangle) bool {
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		for x := rect.Min.X; x < rect.Max.X; x++ {
			if rgba(a, image.Pt(x, y)) != rgba(b, image.Pt(x, y)) {
				return false
			}
		}
	}
	return true
}
