package render

import (
	"fmt"

	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/msg"
)

// The sentences below are the terminal view's and the HTML page's both
// (report fills the page's data from them), so the two never describe one
// model differently.

// Heading names what is inspected: a model trained elsewhere by its path,
// source and tokenizer, the lab's checkpoint by its path and step (a model
// trained elsewhere has no step). It is escaped.
func (v Inspect) Heading() string {
	heading, _, _ := v.names()
	return heading
}

// Title names the model in the HTML page's title (which the page
// escapes): a model trained elsewhere by its source and path, the lab's
// checkpoint by its task and step.
func (v Inspect) Title() string {
	_, title, _ := v.names()
	return title
}

// FigureHeading names the model above the PNG's heatmaps, with its shape:
// a model trained elsewhere as Heading does, the lab's checkpoint by its
// path, task and step.
func (v Inspect) FigureHeading() string {
	_, _, figure := v.names()
	return figure
}

// names are Heading, Title and FigureHeading: the one place the views tell
// a model trained elsewhere's names from the lab's.
func (v Inspect) names() (heading, title, figure string) {
	shape := v.Model.Shape()
	if v.Source != "" {
		heading = fmt.Sprintf("model %s: %s, tokenizer %s", escape.Label(v.Checkpoint), escape.Label(v.Source), escape.Label(v.Tokenizer))
		return heading, fmt.Sprintf("%s, %s", v.Source, v.Checkpoint), fmt.Sprintf("%s  (%s)", heading, shape)
	}
	return fmt.Sprintf("checkpoint %s (step %d)", escape.Label(v.Checkpoint), v.Step), fmt.Sprintf("%s, step %d", v.Task, v.Step),
		fmt.Sprintf("%s  task %s  step %d  (%s)", v.Checkpoint, v.Task, v.Step, shape)
}

// Description is the model's shape and blocks: "12 layers x 12 heads,
// d_model 768, pre-LN blocks with MLP, tied embeddings".
func (m Model) Description() string {
	return fmt.Sprintf("%s x %s, d_model %d, %s%s", msg.Count(m.Layers, "layer"), msg.Count(m.Heads, "head"), m.DModel, m.Blocks, m.familySuffix())
}

// RolesNote says what the head roles were scored on and at which query
// positions: "roles scored on the text given (...), at every position".
func (v Inspect) RolesNote() string {
	return fmt.Sprintf("roles %s, at %s", v.rolesSource(), v.rowsUsed())
}
