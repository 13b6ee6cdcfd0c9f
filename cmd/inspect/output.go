package main

import (
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"os"
	"strconv"

	"github.com/pkg/errors"
	"golang.org/x/term"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/internal/rundir"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render"
)

// report is everything the outputs draw from.
type report struct {
	opts  options
	info  *model.CheckpointInfo
	task  data.Task
	cfg   model.Config
	dtype tensor.Dtype
	ex    sequence
	fw    pass
	roles [][]heads.Result // [layer][head], pooled over opts.samples examples
}

// colorMode resolves -color: never is plain; always is colour; auto is
// colour only when stdout is a terminal and NO_COLOR is unset or empty.
// Colour is 24-bit when COLORTERM says truecolor or 24bit, else 256-colour.
func colorMode(flagValue string, stdout io.Writer) (render.Mode, error) {
	switch flagValue {
	case "never":
		return render.Plain, nil
	case "auto":
		if os.Getenv("NO_COLOR") != "" || !isTerminal(stdout) {
			return render.Plain, nil
		}
	case "always":
	default:
		return render.Plain, errors.Errorf("-color %q: want auto, always or never", flagValue)
	}
	if ct := os.Getenv("COLORTERM"); ct == "truecolor" || ct == "24bit" {
		return render.TrueColor, nil
	}
	return render.Color256, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// defaultWidth is the layout width when neither COLUMNS nor the terminal
// says otherwise (stdout redirected to a file or a pipe).
const defaultWidth = 80

// width is the terminal width for laying out heads side by side: COLUMNS if
// it is a positive integer, else the terminal's size, else defaultWidth.
func width(stdout io.Writer) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return defaultWidth
}

// selected lists the layers and heads -layer and -head pick.
func (r report) selected() (layers, hs []int) {
	for l := range r.cfg.Layers {
		if r.opts.layer < 0 || r.opts.layer == l {
			layers = append(layers, l)
		}
	}
	for h := range r.cfg.Heads {
		if r.opts.head < 0 || r.opts.head == h {
			hs = append(hs, h)
		}
	}
	return layers, hs
}

func (r report) labels() []string {
	out := make([]string, len(r.ex.tokens))
	for i, id := range r.ex.tokens {
		out[i] = r.task.Label(id)
	}
	return out
}

// writeText prints the header, the predictions table and one row of heatmaps
// per layer with each head's role underneath.
func (r report) writeText(w io.Writer, mode render.Mode, width int) error {
	p := &printer{w: w}
	c := r.cfg
	blocks := "attention-only blocks"
	if c.MLP {
		blocks = "pre-LN blocks with MLP"
	}
	p.printf("checkpoint %s (step %d)\n", r.opts.checkpoint, r.info.Step)
	p.printf("model: %s x %s, d_model %d, %s\n", count(c.Layers, "layer"), count(c.Heads, "head"), c.DModel, blocks)
	source := fmt.Sprintf("one example of task %s drawn with seed %d", r.task.Name(), r.opts.seed)
	if !r.ex.drawn {
		source = "tokens from -tokens; target = the next token"
	}
	p.printf("sequence (%s):\n", source)
	if p.err == nil {
		p.err = render.Table(w, r.predictionRows(), width)
	}
	correct, scored := r.accuracy()
	p.printf("correct at scored positions: %d/%d\n\n", correct, scored)
	rowsUsed := "at the positions the task scores"
	if r.opts.allRows {
		rowsUsed = "at every position"
	}
	p.printf("heatmaps: the sequence above; rows = queries, columns = keys, blank = masked\n")
	p.printf("roles: pooled over %d examples of %s (seed %d), %s\n", r.opts.samples, r.task.Name(), r.opts.seed, rowsUsed)
	layers, hs := r.selected()
	for _, l := range layers {
		var panels []render.Panel
		for _, h := range hs {
			panels = append(panels, r.panel(l, h, textNotes(r.roles[l][h])))
		}
		p.printf("\n")
		if p.err == nil {
			p.err = render.Terminal(w, panels, mode, width)
		}
	}
	p.printf("\nprev = previous-token, first = first-token, sep = separator, off k = offset k,\n")
	p.printf("dup = duplicate-token, ind = induction; scores in [0,1], 0 = no better than\n")
	p.printf("uniform; H = mean row entropy in nats (as a share of uniform's)\n")
	return p.err
}

// predictionRows is the position / token / target / prediction table; a
// target and a mark only where the task scores the position.
func (r report) predictionRows() []render.Row {
	t := len(r.ex.tokens)
	rows := []render.Row{{Name: "position"}, {Name: "token"}, {Name: "target"}, {Name: "predicted"}, {Name: ""}}
	for i := range t {
		target, mark := "", ""
		if r.ex.scored[i] != 0 {
			target = r.task.Label(r.ex.targets[i])
			mark = "✗"
			if r.fw.predictions[i] == r.ex.targets[i] {
				mark = "✓"
			}
		}
		for k, cell := range []string{strconv.Itoa(i), r.task.Label(r.ex.tokens[i]), target, r.task.Label(r.fw.predictions[i]), mark} {
			rows[k].Cells = append(rows[k].Cells, cell)
		}
	}
	return rows
}

func (r report) accuracy() (correct, scored int) {
	for i, s := range r.ex.scored {
		if s != 0 {
			scored++
			if r.fw.predictions[i] == r.ex.targets[i] {
				correct++
			}
		}
	}
	return correct, scored
}

// panel is head (l, h) on the displayed sequence.
func (r report) panel(l, h int, notes []string) render.Panel {
	labels := r.labels()
	return render.Panel{
		Title:   fmt.Sprintf("layer %d head %d", l, h),
		Weights: r.fw.attention[l][h],
		Rows:    labels,
		Cols:    labels,
		Causal:  true,
		Notes:   notes,
	}
}

// textNotes are the lines under a terminal heatmap: the role, every pattern
// score (two to a line, so they fit under a small map) and the entropy.
func textNotes(res heads.Result) []string {
	s := res.Scores
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	return []string{
		"role: " + res.String(),
		fmt.Sprintf("prev %s  self %s", f(s[heads.PreviousToken]), f(s[heads.Self])),
		fmt.Sprintf("first %s  sep %s", f(s[heads.FirstToken]), f(s[heads.Separator])),
		fmt.Sprintf("off %d %s  dup %s", res.OffsetK, f(s[heads.Offset]), f(s[heads.Duplicate])),
		fmt.Sprintf("ind %s  H %s (%s)", f(s[heads.Induction]), f(res.Entropy), f(res.EntropyNorm)),
	}
}

// writePNG draws the selected layers x heads as one image, written by the
// output rule (rundir.WriteOutput): never over the checkpoint, a run file or
// anything but a regular file.
func (r report) writePNG(path string) error {
	img, _, err := render.Grid(r.pngGrid())
	if err != nil {
		return err
	}
	err = rundir.WriteOutput(path, []string{r.opts.checkpoint}, func(w io.Writer) error {
		return png.Encode(w, img)
	})
	return errors.Wrap(err, "-png")
}

// pngGrid is the selected heads as PNG panels [layer][head], each titled
// with its role and entropy.
func (r report) pngGrid() [][]render.Panel {
	layers, hs := r.selected()
	grid := make([][]render.Panel, 0, len(layers))
	for _, l := range layers {
		var row []render.Panel
		for _, h := range hs {
			res := r.roles[l][h]
			note := fmt.Sprintf("%s, H %.2f", res.String(), res.Entropy)
			p := r.panel(l, h, []string{note})
			p.Title += "  (rows: queries, columns: keys)"
			row = append(row, p)
		}
		grid = append(grid, row)
	}
	return grid
}

// jsonReport is the -json object. Attention and logits are float32 for a
// Float32 model so they print at float32 precision.
type jsonReport struct {
	Checkpoint  string           `json:"checkpoint"`
	Step        int              `json:"step"`
	Task        string           `json:"task"`
	Seed        uint64           `json:"seed"`
	Samples     int              `json:"samples"` // examples the head scores are pooled over
	Tokens      []int            `json:"tokens"`
	Labels      []string         `json:"labels"`
	Targets     []*int           `json:"targets"` // null where the position is not scored
	Attention   any              `json:"attention"`
	Logits      any              `json:"logits"`
	Predictions []int            `json:"predictions"`
	Heads       [][]heads.Result `json:"heads"`
}

// writeJSON prints the whole model output as one JSON object. -layer and
// -head do not filter it, so indices always mean the model's own layer and
// head numbers.
func (r report) writeJSON(w io.Writer) error {
	j := jsonReport{
		Checkpoint: r.opts.checkpoint, Step: r.info.Step, Task: r.task.Name(), Seed: r.opts.seed, Samples: r.opts.samples,
		Tokens: r.ex.tokens, Labels: r.labels(), Predictions: r.fw.predictions, Heads: r.roles,
		Attention: r.fw.attention, Logits: r.fw.logits,
	}
	for i := range r.ex.tokens {
		var t *int
		if r.ex.scored[i] != 0 {
			t = &r.ex.targets[i]
		}
		j.Targets = append(j.Targets, t)
	}
	if r.dtype == tensor.Float32 {
		j.Attention, j.Logits = attention32(r.fw.attention), rows32(r.fw.logits)
	}
	return errors.Wrap(json.NewEncoder(w).Encode(j), "writing JSON")
}

func attention32(a [][][][]float64) [][][][]float32 {
	out := make([][][][]float32, len(a))
	for l, layer := range a {
		for _, head := range layer {
			out[l] = append(out[l], rows32(head))
		}
	}
	return out
}

func rows32(m [][]float64) [][]float32 {
	out := make([][]float32, len(m))
	for i, row := range m {
		out[i] = make([]float32, len(row))
		for j, v := range row {
			out[i][j] = float32(v)
		}
	}
	return out
}

// count is "1 layer" or "2 layers".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// printer writes formatted text and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
