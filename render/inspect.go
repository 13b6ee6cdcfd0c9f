package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/msg"
)

// Inspect is the text view of a checkpoint's heads (inspect's default
// view, or with Summary its -summary): the model, one line per head, the
// circuits and ablation tables when present, the sequence with the model's
// predictions and each layer's heatmaps.
type Inspect struct {
	Checkpoint string // as the user named it
	Step       int
	Model      Model
	Task       string
	Samples    int    // examples the roles (and a mean heatmap) pool over
	Seed       uint64 // of the examples and of the sequence drawn

	// RolesOnSequence: the roles were scored on the sequence shown (a text
	// model opened without its text); RolesOnGiven: that sequence is the
	// text given to a model trained elsewhere; RolesEveryRow: at every
	// query position, not only at those the task scores.
	RolesOnSequence, RolesOnGiven, RolesEveryRow bool

	// Source and Tokenizer say where a model trained elsewhere comes from
	// ("Hugging Face GPT2LMHeadModel") and its tokenizer's name; "" for
	// the lab's checkpoints.
	Source, Tokenizer string
	// TaskNote, when set, says how the task's examples depart from what it
	// usually draws (a small vocabulary's tokens drawn with replacement).
	TaskNote string

	Heads    []HeadLine          // the selected heads, layer by layer
	Circuits *Circuits           // nil: none asked for
	Ablation *Ablation           // nil: none asked for
	Patching *ActivationPatching // nil: none asked for (-patch)
	// Summary stops the view after the heads' table, the circuits and
	// the ablation table (its most important heads when there are many).
	Summary bool
	// Length is the task length of the example shown when the user set it
	// (-length); 0: the trained one. The roles are scored at the trained
	// length either way.
	Length   int
	Sequence Sequence
	// Mean: the heatmaps are each head's mean over Samples examples.
	Mean   bool
	Layers [][]Panel // the selected heads' heatmaps, one row per layer
	// LayerNote, when set, says that the heatmaps show one layer of many
	// (a model of many heads, by default) while Heads lists every head.
	LayerNote string
}

// Model is the shape of a model as the views name it.
type Model struct {
	Layers, Heads, DModel int
	MLP                   bool   // pre-LN blocks with an MLP, else attention-only blocks
	Blocks                string // the blocks' parts (model.Config.Blocks)
	Family                string // the attention variant; "" for the original design
	// KVHeads is the number G of key-value heads when the query heads
	// share them (grouped-query attention: each serves Heads/G
	// consecutive query heads); 0 when every query head has its own.
	KVHeads int
	// LayerKinds [layer] is "local" (windowed) or "global" for each layer
	// of a local/global model, nil when every layer is alike.
	LayerKinds []string
}

// kind is layer l's entry of LayerKinds, "" when the layers are alike.
func (m Model) kind(l int) string {
	if l < len(m.LayerKinds) {
		return m.LayerKinds[l]
	}
	return ""
}

// Grouped reports whether query heads share key-value heads.
func (m Model) Grouped() bool { return m.KVHeads > 0 && m.KVHeads < m.Heads }

// KVHead is the key-value head query head h reads: h / (Heads/KVHeads).
// Only meaningful when Grouped.
func (m Model) KVHead(h int) int { return h / (m.Heads / m.KVHeads) }

// Shape is "2 layers x 4 heads" and the attention variant, if any.
func (m Model) Shape() string {
	return fmt.Sprintf("%s x %s%s", msg.Count(m.Layers, "layer"), msg.Count(m.Heads, "head"), m.familySuffix())
}

func (m Model) familySuffix() string {
	if m.Family != "" {
		return ", " + m.Family
	}
	return ""
}

// HeadLine is one head's row of the heads' table.
type HeadLine struct {
	Layer, Head    int
	Role           string
	Code           string // the role in two or three letters, for the grid of many heads (heads.Result.Code)
	Score, Entropy float64
}

// Sequence is the sequence shown and the model's predictions on it, one
// entry per position.
type Sequence struct {
	Labels    []string
	Targets   []string // "" where the position is not scored
	Predicted []string
	Scored    []bool // the positions scored
	Correct   []bool // the prediction is the target
	// Drawn: one example of the task, else tokens the user gave, scored
	// where the task scores (TaskScored, the task's own positions).
	Drawn      bool
	TaskScored []bool
	// From is the flag the user gave the sequence with (-tokens, -text);
	// EveryPosition: every prediction of it is scored (text given to a
	// model trained elsewhere) rather than the task's positions.
	From          string
	EveryPosition bool
	// Misplaced is the first position where the user's tokens hold the
	// separator and the task's example does not, or the reverse (-1: none);
	// TaskSep lists where the task's example holds it.
	Misplaced int
	TaskSep   []int
}

// Accuracy counts the scored positions and those predicted right.
func (s Sequence) Accuracy() (correct, scored int) {
	for i, ok := range s.Scored {
		if ok {
			scored++
			if s.Correct[i] {
				correct++
			}
		}
	}
	return correct, scored
}

// rows is the position / token / target / prediction table; a target and
// a mark only where the position is scored.
func (s Sequence) rows() []Row {
	rows := []Row{{Name: "position"}, {Name: "token"}, {Name: "target"}, {Name: "predicted"}, {Name: ""}}
	for i := range s.Labels {
		mark := ""
		if s.Scored[i] {
			mark = "✗"
			if s.Correct[i] {
				mark = "✓"
			}
		}
		for k, cell := range []string{strconv.Itoa(i), s.Labels[i], s.Targets[i], s.Predicted[i], mark} {
			rows[k].Cells = append(rows[k].Cells, cell)
		}
	}
	return rows
}

// roleLegend names every role's abbreviation in the heatmaps' notes.
const roleLegend = "prev = previous-token, first = first-token, sep = separator, off k = offset k, " +
	"dup = duplicate-token, ind = induction, min = smallest-remaining (the smallest symbol before SEP not yet written after it), " +
	"next> = next-larger (earlier positions holding the smallest symbol above the query's); " +
	"scores in [0,1], 0 = no better than uniform; H = mean row entropy in nats (as a share of uniform's)"

// WriteInspect writes the view for a terminal of width columns: prose
// wraps to it and the heads of a layer sit side by side as they fit.
func WriteInspect(w io.Writer, v Inspect, mode Mode, width int) error {
	p := &printer{w: w}
	m := v.Model
	p.para(width, "%s", v.Heading())
	p.para(width, "model: %s", m.Description())
	p.para(width, "heads: %s", v.RolesNote())
	if v.TaskNote != "" {
		p.para(width, "%s: %s", v.Task, v.TaskNote)
	}
	writeHeads(p, v.Heads, m, width)
	if v.Circuits != nil {
		rows := len(v.Circuits.PerHead)
		if v.Summary {
			rows = summaryRows(rows)
		}
		writeCircuits(p, width, *v.Circuits, v.Samples, v.Seed, m.MLP, rows)
	}
	if v.Patching != nil {
		p.printf("\n")
		writePatching(p, width, mode, *v.Patching)
	}
	if v.Summary {
		if v.Length != 0 && v.Sequence.Drawn {
			p.para(width, "-length %d changes only the example shown, which -summary leaves out", v.Length)
		}
		if v.Ablation != nil {
			p.printf("\n")
			writeAblation(p, width, *v.Ablation, summaryRows(len(v.Ablation.Rows)))
		}
		return p.err
	}
	p.printf("\n")
	writeSequence(p, v, width)
	p.printf("\n")
	if v.Mean {
		p.para(width, "heatmaps: the mean over %s of %s (seed %d); rows = query positions, columns = key positions, %s = masked",
			msg.Count(v.Samples, "example"), v.Task, v.Seed, MaskedGlyph)
	} else {
		p.para(width, "heatmaps: the sequence above; rows = queries, columns = keys, %s = masked", MaskedGlyph)
	}
	if v.LayerNote != "" {
		p.para(width, "%s", v.LayerNote)
	}
	for _, panels := range v.Layers {
		p.printf("\n")
		if p.err == nil {
			p.err = Terminal(w, panels, mode, width)
		}
	}
	p.printf("\n")
	p.para(width, "%s", roleLegend)
	if v.Ablation != nil {
		p.printf("\n")
		writeAblation(p, width, *v.Ablation, len(v.Ablation.Rows))
	}
	return p.err
}

// rolesSource says what the head roles were scored on.
func (v Inspect) rolesSource() string {
	if v.RolesOnGiven {
		return "scored on the text given (without -text or -tokens they pool over repeated random tokens)"
	}
	if v.RolesOnSequence {
		return "scored on the sequence shown (they pool over windows of the text when -data names it)"
	}
	if v.Length != 0 {
		return fmt.Sprintf("pooled over %s of %s at its trained length (seed %d)", msg.Count(v.Samples, "example"), v.Task, v.Seed)
	}
	return fmt.Sprintf("pooled over %s of %s (seed %d)", msg.Count(v.Samples, "example"), v.Task, v.Seed)
}

// rowsUsed says at which query positions the roles were scored.
func (v Inspect) rowsUsed() string {
	if v.RolesEveryRow {
		return "every position"
	}
	return "the positions the task scores"
}

// writeHeads prints one line per head: its role, the score and the mean
// row entropy, and after the head the key-value head it reads when the
// model groups its query heads (m.Grouped), so heads sharing keys and
// values can be told apart from heads that merely look alike, then
// whether its layer is local or global in a local/global model.
func writeHeads(p *printer, lines []HeadLine, m Model, width int) {
	if len(lines) > MaxHeadLines {
		writeHeadGrid(p, lines, m, width)
		return
	}
	roleW := len("role")
	for _, h := range lines {
		roleW = max(roleW, utf8.RuneCountInString(h.Role))
	}
	kv := func(h int) string {
		if !m.Grouped() {
			return ""
		}
		if h < 0 {
			return fmt.Sprintf(" %3s", "kv")
		}
		return fmt.Sprintf(" %3d", m.KVHead(h))
	}
	kind := func(l int) string { // a local/global model's layers say which they are
		if m.LayerKinds == nil {
			return ""
		}
		if l < 0 {
			return fmt.Sprintf("  %-6s", "kind")
		}
		return fmt.Sprintf("  %-6s", m.kind(l))
	}
	p.printf("%5s %4s%s%s  %-*s %5s %7s\n", "layer", "head", kv(-1), kind(-1), roleW, "role", "score", "entropy")
	for _, h := range lines {
		p.printf("%5d %4d%s%s  %-*s %5.2f %7.2f\n", h.Layer, h.Head, kv(h.Head), kind(h.Layer), roleW, escape.Label(h.Role), h.Score, h.Entropy)
	}
}

// writeSequence prints where the sequence comes from, the predictions
// table, the accuracy and what is odd about tokens the user gave.
func writeSequence(p *printer, v Inspect, width int) {
	s := v.Sequence
	switch {
	case s.Drawn && v.Length != 0:
		p.para(width, "sequence (one example of task %s at length %d, drawn with seed %d):", v.Task, v.Length, v.Seed)
	case s.Drawn:
		p.para(width, "sequence (one example of task %s drawn with seed %d):", v.Task, v.Seed)
	case s.EveryPosition:
		p.para(width, "sequence (from %s; the target of each position is the next token (none at the last), every one scored):", s.From)
	default:
		p.para(width, "sequence (from %s; the target of each position is the next token (none at the last), scored at the positions task %s scores: %s):",
			s.From, v.Task, positions(s.TaskScored))
	}
	if p.err == nil {
		p.err = Table(p.w, s.rows(), width)
	}
	if correct, scored := s.Accuracy(); scored > 0 {
		p.printf("correct at scored positions: %d/%d\n", correct, scored)
	} else {
		p.para(width, "no position of the %s given is one task %s scores (%s), so there is nothing to score",
			msg.Count(len(s.Labels), "token"), v.Task, positions(s.TaskScored))
	}
	if s.Misplaced >= 0 {
		at := make([]string, len(s.TaskSep))
		for i, pos := range s.TaskSep {
			at[i] = strconv.Itoa(pos)
		}
		p.para(width, "note: these tokens do not follow task %s, which has SEP only at position %s (this input differs at position %d); the model never saw such input, so its predictions are not what it learned",
			v.Task, strings.Join(at, ", "), s.Misplaced)
	}
}

// positions lists the positions marked, as ranges: "8-14".
func positions(marked []bool) string {
	var parts []string
	for i := 0; i < len(marked); i++ {
		if !marked[i] {
			continue
		}
		j := i
		for j+1 < len(marked) && marked[j+1] {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", i, j))
		} else {
			parts = append(parts, strconv.Itoa(i))
		}
		i = j
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Ablation is -ablate's table: the set's scores intact, then one row per
// head removed, most important first.
type Ablation struct {
	Mode        string // how a head was removed: zero or mean
	Replacement string // what its output became: "zeros", "its mean over them"
	// On says what the heads were removed on: "the 256 held-out examples
	// of the run", "1 repeated-tokens sequence of 100 tokens", "the
	// sequence given with -text (7 tokens)".
	On                         string
	Loss, TokenAcc, ExactMatch float64 // intact
	Rows                       []AblationRow
	// NoExactMatch: the set has no exact-match target (a language model's
	// text, never written whole exactly, or a model trained elsewhere,
	// which has no task of its own): exact match, which means nothing
	// there, is left out.
	NoExactMatch bool
}

// AblationRow is one head removed.
type AblationRow struct {
	Layer, Head                                     int
	Role                                            string
	Loss, DeltaLoss, DeltaTokenAcc, DeltaExactMatch float64
}

// summaryRows is how many of n heads -summary's ablation and circuits
// tables list: all of a model whose heads' table lists a line each, else
// the MaxHeadLines/2 most important (the rest are summed up in one line).
func summaryRows(n int) int {
	if n <= MaxHeadLines {
		return n
	}
	return MaxHeadLines / 2
}

// Widths of the ablation table's columns but the role.
const (
	ablationFixed = 12 + 9 + 2*10 // "layer head  ", " loss", " Δloss", " Δtoken"
	ablationExact = 10            // " Δexact"
	minRoleWidth  = 8             // a cut role still reads: "previou…"
)

// writeAblation prints the intact scores, then one row for each of the
// first rows heads (the most important), fitted to width: a role too long
// for the room left is cut. A line says how many heads are left out and
// how far their loss moved.
func writeAblation(p *printer, width int, a Ablation, rows int) {
	exact, exactHead := fmt.Sprintf(", exact match %.4f", a.ExactMatch), fmt.Sprintf(" %9s", "Δexact")
	fixed := ablationFixed + ablationExact
	if a.NoExactMatch {
		exact, exactHead, fixed = "", "", ablationFixed
	}
	p.para(width, "ablation (%s): each head's output replaced by %s on %s; intact: loss %.4f, token acc %.4f%s",
		a.Mode, a.Replacement, a.On, a.Loss, a.TokenAcc, exact)
	shown := a.Rows[:min(rows, len(a.Rows))]
	roleW := len("role")
	for _, row := range shown {
		roleW = max(roleW, utf8.RuneCountInString(escape.Label(row.Role)))
	}
	roleW = max(minRoleWidth, min(roleW, width-1-fixed))
	p.printf("%5s %4s  %-*s %8s %9s %9s%s\n", "layer", "head", roleW, "role", "loss", "Δloss", "Δtoken", exactHead)
	for _, row := range shown {
		if !a.NoExactMatch {
			exact = fmt.Sprintf(" %+9.4f", row.DeltaExactMatch)
		}
		p.printf("%5d %4d  %-*s %8.4f %+9.4f %+9.4f%s\n", row.Layer, row.Head, roleW, cutTo(escape.Label(row.Role), roleW), row.Loss, row.DeltaLoss, row.DeltaTokenAcc, exact)
	}
	if rest := a.Rows[len(shown):]; len(rest) > 0 {
		p.para(width, "the other %s: Δloss from %+.4f to %+.4f (without -summary every head is listed)",
			msg.Count(len(rest), "head"), rest[len(rest)-1].DeltaLoss, rest[0].DeltaLoss)
	}
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

// para prints a paragraph wrapped to width columns (at most width-1
// characters a line, so no terminal wraps it), continuation lines indented
// by two spaces. It breaks after ", " and "; " where it can, so that
// "dup = duplicate-token" stays together, and between words where a clause
// is too long for a line.
func (p *printer) para(width int, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	var clauses []string
	for start, i := 0, 0; i < len(text); i++ {
		if (text[i] == ',' || text[i] == ';') && i+1 < len(text) && text[i+1] == ' ' || i == len(text)-1 {
			clauses = append(clauses, text[start:i+1])
			start = i + 2
		}
	}
	line := ""
	add := func(piece string) {
		if line != "" && visibleWidth(line)+1+visibleWidth(piece) > width-1 {
			p.printf("%s\n", line)
			line = " "
		}
		if line != "" {
			line += " "
		}
		line += piece
	}
	for _, c := range clauses {
		if visibleWidth(c)+2 <= width-1 {
			add(c)
			continue
		}
		for _, word := range strings.Fields(c) {
			add(word)
		}
	}
	p.printf("%s\n", line)
}
