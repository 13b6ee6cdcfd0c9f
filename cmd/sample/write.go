package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/internal/escape"
)

// printer prints a task's tokens for a person: text as its characters
// through escape.Text (newline and tab kept, every other control, C1 and
// bidi character a visible escape) unless raw, other tasks as their labels
// through escape.Label.
type printer struct {
	task data.Task
	raw  bool
}

// text is ids as the task writes them: the characters of a text model,
// else the labels, spaced.
func (p printer) text(ids []int) string {
	if !data.IsText(p.task) {
		return p.labels(ids)
	}
	s := decode(p.task, ids)
	if p.raw {
		return s
	}
	return escape.Text(s)
}

// labels is ids as escaped labels, one space between.
func (p printer) labels(ids []int) string {
	cells := make([]string, len(ids))
	for i, id := range ids {
		cells[i] = p.label(id)
	}
	return strings.Join(cells, " ")
}

func (p printer) label(id int) string { return escape.Label(p.task.Label(id)) }

// decode is the characters of text ids, as the file holds them.
func decode(task data.Task, ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		r, _ := data.Char(task, id)
		if !utf8.ValidRune(r) {
			b.WriteString(task.Label(id))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// flush pushes what w holds to its reader when w buffers.
func flush(w io.Writer) error {
	if f, ok := w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// stream writes rows continuations of prompt by plan.n tokens (plan.feed
// fed), picked by s from st's logits (vocab per row), printing each as
// continuations says.
func stream(w io.Writer, st generate.Stepper, p printer, prompt []int, plan contextPlan, rows int, s *generate.Sampler, vocab int) error {
	prompts, ns := make([][]int, rows), make([]int, rows)
	for i := range prompts {
		prompts[i], ns[i] = plan.feed, plan.n
	}
	out := newContinuations(w, p, prompt, plan.n, rows)
	if err := out.start(); err != nil {
		return err
	}
	if _, err := generate.Stream(st, prompts, ns, s, vocab, out.emit); err != nil {
		io.WriteString(w, "\n") // ends the line the first row was streaming on
		return err
	}
	return nil
}

// continuations prints -samples continuations of one prompt as
// generate.Stream hands their tokens over: the prompt, then each token of
// the first row as soon as it is picked; the other rows, which finish in
// the same step, each whole once done (their draws interleave with the
// first row's, so printing them in turn keeps each -seed's tokens as they
// were). A text row is the prompt and its continuation; any other task's,
// "prompt | tokens".
type continuations struct {
	printer
	w      io.Writer
	prompt string // the prompt as printed
	n      int    // tokens per row
	rows   []strings.Builder
}

func newContinuations(w io.Writer, p printer, prompt []int, n, rows int) *continuations {
	c := &continuations{printer: p, w: w, prompt: p.text(prompt), n: n, rows: make([]strings.Builder, rows)}
	if !data.IsText(p.task) {
		c.prompt += " |"
	}
	return c
}

// start prints the first row's head and prompt before any token.
func (c *continuations) start() error {
	_, err := io.WriteString(c.w, c.head(0))
	if err == nil {
		err = flush(c.w)
	}
	return err
}

func (c *continuations) head(row int) string {
	if len(c.rows) == 1 {
		return c.prompt
	}
	return fmt.Sprintf("--- sample %d\n%s", row+1, c.prompt)
}

// emit takes the newest token of row, written so far.
func (c *continuations) emit(row int, written []int) error {
	piece := c.text(written[len(written)-1:])
	if !data.IsText(c.task) {
		piece = " " + piece
	}
	if len(written) == c.n {
		piece += "\n"
	}
	if row == 0 {
		if _, err := io.WriteString(c.w, piece); err != nil {
			return err
		}
		return flush(c.w)
	}
	b := &c.rows[row]
	if b.Len() == 0 {
		b.WriteString(c.head(row))
	}
	b.WriteString(piece)
	if len(written) < c.n {
		return nil
	}
	if _, err := io.WriteString(c.w, b.String()); err != nil {
		return err
	}
	return flush(c.w)
}

// exampleRows prints held-out examples in order as their rows finish: row
// i once it and every row before it are written.
type exampleRows struct {
	w       io.Writer
	show    func(i int, written []int) bool // prints example i, reports whether it is exact
	n       []int                           // tokens each row writes
	written [][]int
	shown   int
	exact   int
}

func (e *exampleRows) emit(row int, written []int) error {
	if len(written) < e.n[row] {
		return nil
	}
	e.written[row] = slices.Clone(written)
	for e.shown < len(e.n) && e.written[e.shown] != nil {
		if e.show(e.shown, e.written[e.shown]) {
			e.exact++
		}
		e.shown++
	}
	return flush(e.w)
}

// showExample prints one example as input, target and model rows, the
// columns aligned, with ^ under each wrong token; it reports whether every
// token is right.
func showExample(w io.Writer, p printer, i int, prompt, want, got []int) bool {
	width := 1
	for _, ids := range [][]int{prompt, want, got} {
		for _, id := range ids {
			width = max(width, utf8.RuneCountInString(p.label(id)))
		}
	}
	row := func(ids []int) string {
		cells := make([]string, len(ids))
		for k, id := range ids {
			l := p.label(id)
			cells[k] = l + strings.Repeat(" ", width-utf8.RuneCountInString(l))
		}
		return strings.TrimRight(strings.Join(cells, " "), " ")
	}
	marks, right := make([]string, len(got)), 0
	for k := range got {
		marks[k] = strings.Repeat(" ", width)
		if got[k] == want[k] {
			right++
		} else {
			marks[k] = "^" + strings.Repeat(" ", width-1)
		}
	}
	verdict := "exact"
	if right < len(got) {
		verdict = fmt.Sprintf("%d/%d right", right, len(got))
	}
	fmt.Fprintf(w, "#%-3d input   %s\n", i+1, row(prompt))
	fmt.Fprintf(w, "     target  %s\n", row(want))
	fmt.Fprintf(w, "     model   %s   %s\n", row(got), verdict)
	if right < len(got) {
		fmt.Fprintf(w, "             %s\n", strings.TrimRight(strings.Join(marks, " "), " "))
	}
	return right == len(got)
}

// showText prints one text example as Go-quoted strings (which escape
// every control, C1 and format character): the prompt, then what follows
// in the file and what the model wrote.
func showText(w io.Writer, p printer, i int, prompt, want, got []int) bool {
	right := 0
	for k := range got {
		right += b2i(got[k] == want[k])
	}
	fmt.Fprintf(w, "#%-3d prompt  %q\n", i+1, decode(p.task, prompt))
	fmt.Fprintf(w, "     file    %q\n", decode(p.task, want))
	fmt.Fprintf(w, "     model   %q   %d/%d characters right\n", decode(p.task, got), right, len(got))
	return right == len(got)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
