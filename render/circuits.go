package render

import (
	"cmp"
	"fmt"
	"image"
	"math"
	"slices"
	"strings"

	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/msg"
)

// Circuits is the induction papers' circuit metrics of a model (inspect
// -circuits), as the text view and the PNG tables show them.
type Circuits struct {
	Layers, Heads int           // the model's
	PerHead       []CircuitHead // every head, layer by layer
	// DirectLogit is nil when not measured; PerHead's Logit is then unset.
	DirectLogit *DirectLogit
	// Patching is nil when not measured; PerHead's Patched is then unset.
	Patching *Patching
	ICL      *ICL // nil when not measured
	Lens     []LensDepth
	// LensReadout says what the lens does where the readout is not linear
	// (analysis.LensReadout), "" where it is.
	LensReadout string
	Composition []Composition // every pair of heads of consecutive layers
	// DiagonalSample is how many tokens, evenly spaced through the
	// vocabulary, the diagonal shares were read on; 0 for every token.
	DiagonalSample int
}

// CircuitHead is one head's metrics.
type CircuitHead struct {
	Layer, Head int
	// Prefix is its prefix-matching score; Copying and Diagonal its OV
	// circuit's copying score and diagonal share (NaN: not computed, for a
	// vocabulary too large to build the circuit whole).
	Prefix, Copying, Diagonal float64
	Logit                     float64 // what it adds to the correct token's logit
	Patched                   float64 // share of the corrupted run's fall patching it restores; unset when Patching.Undefined
}

// DirectLogit is the parts of the correct token's logit besides the heads.
type DirectLogit struct {
	Positions                 int // scored positions averaged over
	Logit, Embeddings, Biases float64
	MLPs                      []float64 // by layer; nil for attention-only blocks
	// Raises are the tokens the heads adding most to the correct logit
	// raise most directly, those heads first.
	Raises []HeadTokens
	// Readout says what the attribution does where the readout is not
	// linear (analysis.AttributionReadout), "" where it is.
	Readout string
}

// HeadTokens are tokens' labels for one head.
type HeadTokens struct {
	Layer, Head int
	Tokens      []string
}

// Patching is the correct token's mean logit on the clean and the
// corrupted examples, of which the first Examples were patched. Undefined,
// when set, says why no head's share is defined (no fall to restore): the
// views show n/a for each and the reason once.
type Patching struct {
	CleanLogit, CorruptedLogit float64
	Examples                   int
	Undefined                  string
}

// defined reports whether patching was measured and its shares are defined.
func (p *Patching) defined() bool { return p != nil && p.Undefined == "" }

// ICL is the in-context-learning score: the loss of Pairs predictions late
// and early in the sequence, and their difference.
type ICL struct {
	Pairs              int
	Late, Early, Score float64
	// InductionHeads counts the model's heads whose role is induction
	// (every head's, whatever the view selects).
	InductionHeads int
}

// iclLarge is the fall in loss (nats, early minus late) past which the
// view explains a copy predicted without an induction head.
const iclLarge = 1.0

// LensDepth is the logit lens at one depth: 0 after the embeddings, d
// after block d-1.
type LensDepth struct {
	Depth                      int
	Accuracy, LogProb, Correct float64
}

// Composition is how much head B (To) reads head A's (From) output through
// its queries, keys and values; heads as (layer, head).
type Composition struct {
	From, To [2]int
	Q, K, V  float64
}

// depthName names a logit lens depth: "embed", "block 0", ...
func depthName(depth int) string {
	if depth == 0 {
		return "embed"
	}
	return fmt.Sprintf("block %d", depth-1)
}

// headName is "L1 H3".
func headName(layer, head int) string { return fmt.Sprintf("L%d H%d", layer, head) }

// writeCircuits prints each head's prefix-matching and copying scores
// (with the direct logit attribution and patching when measured), the ICL
// score, the logit lens, then the strongest compositions. samples and seed
// are prefix matching's sequences; mlp says the lens reads through ln_f;
// rows is how many heads the per-head table lists (summaryRows).
func writeCircuits(p *printer, width int, c Circuits, samples int, seed uint64, mlp bool, rows int) {
	on := ""
	if c.DiagonalSample > 0 {
		on = fmt.Sprintf(", on %d tokens evenly spaced through the vocabulary", c.DiagonalSample)
	}
	p.para(width, "circuits: prefix matching on %s of random tokens repeated twice (seed %d), copying from each head's OV circuit W_U W_O W_V W_E^T (Σλ/Σ|λ| over its eigenvalues, and the share of tokens it raises most%s)", msg.Count(samples, "sequence"), seed, on)
	if dla := c.DirectLogit; dla != nil {
		through, mlps := "the LM head", ""
		if len(dla.MLPs) > 0 {
			through = "ln_f (its scale held fixed) and the LM head"
			parts := make([]string, len(dla.MLPs))
			for l, x := range dla.MLPs {
				parts[l] = fmt.Sprintf("%+.3f", x)
			}
			mlps = ", MLPs by layer " + strings.Join(parts, " ")
		}
		p.para(width, "direct logit attribution: what each head adds to the correct token's logit through %s, mean over the %s of %s (the parts sum to the logit, %.3f; embeddings %.3f, biases %.3f%s)",
			through, msg.Count(dla.Positions, "scored position"), msg.Count(samples, "example"), dla.Logit, dla.Embeddings, dla.Biases, mlps)
		if dla.Readout != "" {
			p.para(width, "where the readout is not linear: %s", dla.Readout)
		}
		if len(dla.Raises) > 0 {
			parts := make([]string, len(dla.Raises))
			for i, r := range dla.Raises {
				parts[i] = fmt.Sprintf("L%d H%d %s", r.Layer, r.Head, strings.Join(escape.Labels(r.Tokens), " "))
			}
			p.para(width, "the tokens those heads raise most directly (mean over the same positions), for the %d adding most: %s",
				len(dla.Raises), strings.Join(parts, "; "))
		}
	}
	if pt := c.Patching; pt != nil {
		on := ""
		if pt.Examples < samples {
			on = fmt.Sprintf(" (on the first %d of the %s, bounding the forwards a head each)", pt.Examples, msg.Count(samples, "example"))
		}
		if pt.Undefined != "" {
			p.para(width, "activation patching%s: undefined, patched is n/a: %s", on, pt.Undefined)
		} else {
			p.para(width, "activation patching%s: the first copy of the block replaced, the correct token's mean logit falls from %.3f to %.3f; patched is the share of that fall patching the head from the clean run restores",
				on, pt.CleanLogit, pt.CorruptedLogit)
		}
	}
	writeCircuitHeads(p, width, c, rows)
	if icl := c.ICL; icl != nil {
		p.para(width, "in-context learning: the copy's %s lose %.3f nats on average, the same predictions at the block's first occurrence %.3f: score %+.3f (late minus early)",
			msg.Count(icl.Pairs, "prediction"), icl.Late, icl.Early, icl.Score)
		if icl.InductionHeads == 0 && -icl.Score >= iclLarge {
			p.para(width, "no head has the induction role, yet the copy's loss is %.1f nats below its first occurrence's: the model predicts repeats without an induction head, e.g. positionally (an offset head reading a fixed distance back works wherever the repeats keep that distance; on repeated tokens an induction head attends the same way, and the roles name it offset)",
				-icl.Score)
		}
	}
	if len(c.Lens) > 0 {
		lnf := ""
		if mlp {
			lnf = " (and ln_f)"
		}
		p.para(width, "logit lens: the residual stream read out through the LM head%s after the embeddings and after each block, at the scored positions", lnf)
		if c.LensReadout != "" {
			p.para(width, "where the readout is not linear: %s", c.LensReadout)
		}
		p.printf("%-10s %8s %9s %9s\n", "depth", "accuracy", "log p", "logit")
		for _, l := range c.Lens {
			p.printf("%-10s %8.3f %9.3f %9.3f\n", depthName(l.Depth), l.Accuracy, l.LogProb, l.Correct)
		}
	}
	writeCompositions(p, width, c.Composition)
}

// writeCircuitHeads prints the per-head table: every head in the model's
// order, or when rows is fewer, the rows of highest prefix matching (the
// induction heads' mark) and a line saying how far the others' went.
func writeCircuitHeads(p *printer, width int, c Circuits, rows int) {
	heads := c.PerHead
	if rows < len(heads) {
		heads = slices.Clone(heads)
		slices.SortStableFunc(heads, func(a, b CircuitHead) int { return cmp.Compare(b.Prefix, a.Prefix) })
		p.para(width, "the %d of the %d heads of highest prefix matching:", rows, len(heads))
	}
	shown := heads[:min(rows, len(heads))]
	p.printf("%5s %4s  %9s %7s %9s %9s %8s\n", "layer", "head", "prefix", "copying", "diagonal", "logit", "patched")
	for _, h := range shown {
		logit, patched := "-", "-"
		if c.DirectLogit != nil {
			logit = fmt.Sprintf("%+.3f", h.Logit)
		}
		switch {
		case c.Patching.defined():
			patched = fmt.Sprintf("%.3f", h.Patched)
		case c.Patching != nil:
			patched = "n/a"
		}
		diagonal := "-"
		if !math.IsNaN(h.Diagonal) {
			diagonal = fmt.Sprintf("%.3f", h.Diagonal)
		}
		p.printf("%5d %4d  %9.3f %7.3f %9s %9s %8s\n", h.Layer, h.Head, h.Prefix, h.Copying, diagonal, logit, patched)
	}
	if rest := heads[len(shown):]; len(rest) > 0 {
		p.para(width, "the other %s: prefix matching from %.3f to %.3f (without -summary every head is listed)",
			msg.Count(len(rest), "head"), rest[len(rest)-1].Prefix, rest[0].Prefix)
	}
}

// topCompositions is how many head pairs the text view lists.
const topCompositions = 5

// writeCompositions prints the head pairs of strongest K-composition.
func writeCompositions(p *printer, width int, all []Composition) {
	if len(all) == 0 {
		return
	}
	top := slices.Clone(all)
	slices.SortStableFunc(top, func(a, b Composition) int { return cmp.Compare(b.K, a.K) })
	top = top[:min(topCompositions, len(top))]
	p.para(width, "composition (Elhage et al.): ||W_B W_A||_F / (||W_B||_F ||W_A||_F) of head A's output read by head B's queries (Q), keys (K) or values (V), the %d strongest by K", len(top))
	p.printf("%-7s %-7s %6s %6s %6s\n", "from", "to", "Q", "K", "V")
	for _, x := range top {
		p.printf("%-7s %-7s %6.3f %6.3f %6.3f\n", headName(x.From[0], x.From[1]), headName(x.To[0], x.To[1]), x.Q, x.K, x.V)
	}
}

// CircuitImages draws the circuits as PNG tables, to stack under the
// heads' grid: each head's metrics, the K-composition of each pair of
// consecutive layers, and the logit lens.
func CircuitImages(c Circuits) ([]image.Image, error) {
	tables := append([]ScoreTable{headMetrics(c)}, kCompositions(c)...)
	if len(c.Lens) > 0 {
		tables = append(tables, lensTable(c.Lens, c.LensReadout))
	}
	var out []image.Image
	for _, t := range tables {
		img, err := Scores(t)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	return out, nil
}

// headMetrics is the table of each head's circuit metrics, with the ICL
// score in its title.
func headMetrics(c Circuits) ScoreTable {
	title := "circuits: prefix matching, copying (sum of the OV circuit's eigenvalues over the sum of their sizes; diagonal share)"
	var readout []string
	if c.DirectLogit != nil {
		title += ", direct logit attribution"
		if c.DirectLogit.Readout != "" {
			readout = []string{"direct logit attribution: " + c.DirectLogit.Readout}
		}
	}
	switch {
	case c.Patching.defined():
		title += ", share restored by patching"
	case c.Patching != nil:
		title += "; the share restored by patching is undefined: " + c.Patching.Undefined
	}
	t := ScoreTable{
		Title:   append([]string{title}, readout...),
		Columns: []ScoreColumn{{Name: "prefix", Lo: 0, Hi: 1, Format: "%.3f"}, {Name: "copying", Lo: -1, Hi: 1, Format: "%+.3f"}, {Name: "diagonal", Lo: 0, Hi: 1, Format: "%.3f"}},
	}
	if c.DirectLogit != nil {
		lo, hi := 0.0, 0.0
		for _, h := range c.PerHead {
			lo, hi = math.Min(lo, h.Logit), math.Max(hi, h.Logit)
		}
		t.Columns = append(t.Columns, ScoreColumn{Name: "logit", Lo: lo, Hi: hi, Format: "%+.2f"})
	}
	if c.Patching.defined() {
		t.Columns = append(t.Columns, ScoreColumn{Name: "patched", Lo: 0, Hi: 1, Format: "%.3f"})
	}
	noDiagonal := len(c.PerHead) > 0 && math.IsNaN(c.PerHead[0].Diagonal)
	if noDiagonal {
		t.Columns = append(t.Columns[:2], t.Columns[3:]...) // no diagonal share to show
	}
	for _, h := range c.PerHead {
		row := []float64{h.Prefix, h.Copying}
		if !noDiagonal {
			row = append(row, h.Diagonal)
		}
		if c.DirectLogit != nil {
			row = append(row, h.Logit)
		}
		if c.Patching.defined() {
			row = append(row, h.Patched)
		}
		t.Rows = append(t.Rows, headName(h.Layer, h.Head))
		t.Values = append(t.Values, row)
	}
	if icl := c.ICL; icl != nil {
		t.Title = append(t.Title, fmt.Sprintf("in-context learning: the copy's loss %.3f, at the block's first occurrence %.3f: score %+.3f", icl.Late, icl.Early, icl.Score))
	}
	return t
}

// kCompositions is one table per pair of consecutive layers that has
// compositions (every pair, unless heads were picked): layer l's heads
// (rows) read by layer l+1's keys (columns), on one scale, a pair not
// measured (a head not picked) NaN, drawn "-".
func kCompositions(c Circuits) []ScoreTable {
	hi := 0.0
	measured := map[int]bool{} // the layers whose heads' compositions were measured, by the earlier layer
	for _, x := range c.Composition {
		hi = math.Max(hi, x.K)
		measured[x.From[0]] = true
	}
	var tables []ScoreTable
	for l := 0; l+1 < c.Layers; l++ {
		if !measured[l] {
			continue
		}
		t := ScoreTable{Title: []string{fmt.Sprintf("K-composition: layer %d's heads (rows) read by layer %d's keys (columns)", l, l+1)}}
		for h := range c.Heads {
			t.Columns = append(t.Columns, ScoreColumn{Name: headName(l+1, h), Lo: 0, Hi: hi, Format: "%.3f"})
		}
		for from := range c.Heads {
			row := make([]float64, c.Heads)
			for i := range row {
				row[i] = math.NaN()
			}
			for _, x := range c.Composition {
				if x.From == [2]int{l, from} && x.To[0] == l+1 {
					row[x.To[1]] = x.K
				}
			}
			t.Rows, t.Values = append(t.Rows, headName(l, from)), append(t.Values, row)
		}
		tables = append(tables, t)
	}
	return tables
}

// lensTable is the logit lens's accuracy and log-probability by depth,
// with what the lens does where the readout is not linear (readout, or "").
func lensTable(lens []LensDepth, readout string) ScoreTable {
	t := ScoreTable{Title: []string{"logit lens: the residual stream read out at each depth, scored positions"}}
	if readout != "" {
		t.Title = append(t.Title, readout)
	}
	lo := 0.0
	for _, l := range lens {
		lo = math.Min(lo, l.LogProb)
	}
	t.Columns = []ScoreColumn{{Name: "accuracy", Lo: 0, Hi: 1, Format: "%.3f"}, {Name: "log p", Lo: lo, Hi: 0, Format: "%.3f"}}
	for _, l := range lens {
		t.Rows, t.Values = append(t.Rows, depthName(l.Depth)), append(t.Values, []float64{l.Accuracy, l.LogProb})
	}
	return t
}

// InspectImage is the heads' grid, with the circuit tables stacked under
// it when c is not nil.
func InspectImage(f Figure, c *Circuits) (image.Image, error) {
	grid, _, err := Grid(f)
	if err != nil || c == nil {
		return grid, err
	}
	tables, err := CircuitImages(*c)
	if err != nil {
		return nil, err
	}
	return Stack(append([]image.Image{grid}, tables...)...), nil
}
