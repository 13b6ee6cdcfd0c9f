package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/attnscope/attnscope/internal/escape"
)

// Sparks is a text view of curves sharing one x axis (inspect -run): title
// lines, the axis's ends, then sections of labelled sparklines. Every
// sparkline starts at the same column and spans [X0, X1], so the columns
// of all curves stand for the same steps.
type Sparks struct {
	Title    []string
	X0, X1   float64
	Sections []SparkSection
}

// SparkSection is a group of sparklines under heading lines; a section
// with a heading is set apart by a blank line.
type SparkSection struct {
	Heading []string
	Rows    []SparkRow
}

// SparkRow is one labelled sparkline of Y over X on the scale [Lo, Hi].
type SparkRow struct {
	Label string
	// Scale adds the scale to the label: "train loss (0-3)".
	Scale  bool
	X, Y   []float64
	Lo, Hi float64
	// Note follows the line; "" gives the first and the last value,
	// "2.1 -> 0.01".
	Note string
}

// Layout of a Sparks view: the label column and the room kept for the notes
// (exported for tests that measure a view), and the sparklines' width
// bounds.
const (
	SparkLabelWidth = 26
	SparkNoteWidth  = 26
	minSparkWidth   = 20
	maxSparkWidth   = 100
)

// Short prints a curve value in at most 4 significant digits, as Sparks
// shows values.
func Short(v float64) string { return fmt.Sprintf("%.4g", v) }

// WriteSparks writes the view with sparklines as wide as fit width columns
// beside the labels and notes, within fixed bounds. Every line is at most
// width-1 columns, as the other text views (so no terminal wraps it): the
// title and headings wrap as prose, and a note too long to follow its
// sparkline goes on the next line, under the sparkline's start.
func WriteSparks(w io.Writer, s Sparks, width int) error {
	room := width - 1
	spark := max(minSparkWidth, min(maxSparkWidth, room-SparkLabelWidth-2-SparkNoteWidth))
	var b strings.Builder
	p := &printer{w: &b}
	for _, line := range s.Title {
		p.para(width, "%s", escape.Label(line))
	}
	from, to := fmt.Sprintf("step %d", int(s.X0)), fmt.Sprintf("%d", int(s.X1))
	p.printf("%-*s%s%*s\n", SparkLabelWidth, "", from, spark-len(from), to)
	for _, sec := range s.Sections {
		if len(sec.Heading) > 0 {
			p.printf("\n")
		}
		for _, line := range sec.Heading {
			p.para(width, "%s", escape.Label(line))
		}
		for _, r := range sec.Rows {
			label, note := r.Label, r.Note
			if r.Scale {
				label = fmt.Sprintf("%s (%s-%s)", label, Short(r.Lo), Short(r.Hi))
			}
			if note == "" {
				note = Short(r.Y[0]) + " -> " + Short(r.Y[len(r.Y)-1])
			}
			note = escape.Label(note)
			line := fmt.Sprintf("%-*s%s", SparkLabelWidth, escape.Label(label), Sparkline(r.X, r.Y, s.X0, s.X1, spark, r.Lo, r.Hi))
			if visibleWidth(line)+2+visibleWidth(note) > room {
				p.printf("%s\n%*s%s\n", line, SparkLabelWidth, "", note)
			} else {
				p.printf("%s  %s\n", line, note)
			}
		}
	}
	if p.err != nil {
		return p.err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
