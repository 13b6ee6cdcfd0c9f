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
// beside the labels and notes, within fixed bounds.
func WriteSparks(w io.Writer, s Sparks, width int) error {
	spark := max(minSparkWidth, min(maxSparkWidth, width-SparkLabelWidth-SparkNoteWidth))
	var b strings.Builder
	for _, line := range s.Title {
		fmt.Fprintf(&b, "%s\n", escape.Label(line))
	}
	from, to := fmt.Sprintf("step %d", int(s.X0)), fmt.Sprintf("%d", int(s.X1))
	fmt.Fprintf(&b, "%-*s%s%*s\n", SparkLabelWidth, "", from, spark-len(from), to)
	for _, sec := range s.Sections {
		if len(sec.Heading) > 0 {
			b.WriteString("\n")
		}
		for _, line := range sec.Heading {
			fmt.Fprintf(&b, "%s\n", escape.Label(line))
		}
		for _, r := range sec.Rows {
			label, note := r.Label, r.Note
			if r.Scale {
				label = fmt.Sprintf("%s (%s-%s)", label, Short(r.Lo), Short(r.Hi))
			}
			if note == "" {
				note = Short(r.Y[0]) + " -> " + Short(r.Y[len(r.Y)-1])
			}
			fmt.Fprintf(&b, "%-*s%s  %s\n", SparkLabelWidth, escape.Label(label), Sparkline(r.X, r.Y, s.X0, s.X1, spark, r.Lo, r.Hi), escape.Label(note))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
