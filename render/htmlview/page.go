package htmlview

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"html/template"
	"io"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/runlog"
)

// Data is everything the page shows, embedded as its JSON blob.
type Data struct {
	Title      string `json:"title"`
	Checkpoint string `json:"checkpoint"`
	Step       int    `json:"step"`
	// Source says where a model trained elsewhere comes from ("Hugging
	// Face GPT2LMHeadModel"), "" for the lab's checkpoints, which have a
	// Step; Heading is the terminal view's first line (render's
	// Inspect.Heading), shown under the page's title. Write escapes both
	// (escape.Label) as the page shows them: a fine-tuned model's source
	// comes from its run's config.
	Source  string `json:"source,omitempty"`
	Heading string `json:"heading"`
	Task    string `json:"task"`
	Dtype   string `json:"dtype"`
	Params  int    `json:"params"` // weights in the checkpoint
	Model   any    `json:"model"`  // the model config as a JSON object
	// Inspect is the -json object without its attention, which Maps
	// carries: one EncodeMap string a head, [layer][head].
	Inspect json.RawMessage `json:"inspect"`
	Maps    [][]string      `json:"maps"`
	// Thumbs are what the grid draws of a sequence longer than ThumbSide:
	// [layer][head] EncodeThumb strings (absent for a shorter one, whose
	// map the grid draws).
	Thumbs [][]string `json:"thumbs,omitempty"`
	// Labels name the inspect sequence's tokens as its labels member
	// does: given as data, so that the page never decodes Inspect.
	Labels []string `json:"-"`
	// RoleNote says what the head roles were scored on, in the terminal
	// view's words (render's Inspect.RolesNote), for the page's caption.
	RoleNote string `json:"role_note"`
	// PredictedLabels name the inspect sequence's predictions as the
	// terminal's "predicted" row does (Example.PredictedLabels for the
	// others).
	PredictedLabels []string  `json:"predicted_labels"`
	Examples        []Example `json:"examples"` // after the one in Inspect
	Training        *Training `json:"training,omitempty"`
	// Compare are other runs (more -run) whose held-out curves the page
	// draws beside Training's.
	Compare []Training `json:"compare,omitempty"`
	// Graph is the summary of the forward graph that ran, as `inspect
	// -graph` prints it (model.Summary: path, rows of name, op, shape,
	// params, builtin, totals), of GraphBatch sequences of GraphLength
	// tokens.
	Graph       any `json:"graph,omitempty"`
	GraphBatch  int `json:"graph_batch,omitempty"`
	GraphLength int `json:"graph_length,omitempty"`
}

// Example is one sequence run through the model; its fields mean what the
// same fields of `inspect -json` mean, but for its attention (Maps).
type Example struct {
	Source  string   `json:"source"` // e.g. "held-out 3"
	Tokens  []int    `json:"tokens"`
	Labels  []string `json:"labels"`
	Targets []*int   `json:"targets"` // nil where the position is not scored
	// Maps are the attention, [layer][head] EncodeMap strings, and
	// Thumbs what the grid draws of it (Data.Thumbs).
	Maps        [][]string `json:"maps"`
	Thumbs      [][]string `json:"thumbs,omitempty"`
	Logits      any        `json:"logits,omitempty"`
	CutLogits              // instead of Logits for a wide vocabulary
	Predictions []int      `json:"predictions"`
	// PredictedLabels name the predictions as the task labels tokens.
	PredictedLabels []string `json:"predicted_labels"`
}

// CutLogits stands for a sequence's logits when they are too many to carry:
// each position's top logits and log-sum-exp, so p(id) = exp(logit - lse),
// and why they were cut (Cut). The zero value (whole logits) adds nothing
// to JSON.
type CutLogits struct {
	Top [][]TopLogit `json:"logits_top,omitempty"` // [position][k], largest first
	LSE []float64    `json:"logits_lse,omitempty"` // [position]
	Cut *LogitsCut   `json:"logits_cut,omitempty"`
}

// TopLogit is one of a position's largest logits.
type TopLogit struct {
	ID    int     `json:"id"`
	Logit float64 `json:"logit"`
}

// LogitsCut says, as numbers, why a sequence carries CutLogits instead of
// its logits: Positions x Vocab logits are more than Limit, so each
// position keeps its TopK largest.
type LogitsCut struct {
	TopK      int `json:"top_k"`
	Vocab     int `json:"vocab"`
	Positions int `json:"positions"`
	Limit     int `json:"limit"`
}

// Training is what the run directory recorded, as runlog.ReadLogs reads it.
type Training struct {
	Dir string `json:"dir"`
	// Train holds the training lines of metrics.jsonl and Eval its
	// evaluation lines.
	Train []runlog.TrainRecord `json:"train"`
	Eval  []runlog.EvalRecord  `json:"eval"`
	// AtLength are the evaluations at train.eval_lengths (eval_length).
	AtLength []runlog.EvalRecord `json:"eval_at_length,omitempty"`
	// Unit is what a language model's loss is per ("character" or
	// "token"): its held-out bits per unit are drawn and the exact match
	// of whole windows is not; "" for the toy tasks.
	Unit string `json:"unit,omitempty"`
	// Stride is 1 when every training line is here, k when every k-th is.
	Stride int `json:"stride"`
	// Heads is each head's strongest role through training, from
	// roles.jsonl; absent when the run recorded none.
	Heads [][]runlog.HeadHistory `json:"heads,omitempty"`
}

var (
	//go:embed page.html
	pageHTML string
	//go:embed page.css
	pageCSS string
	//go:embed page.js
	pageJS string
)

var page = template.Must(template.New("page").Parse(pageHTML))

// Write renders the page for d.
func Write(w io.Writer, d Data) error {
	if len(d.Inspect) == 0 {
		return errors.New("html page: no inspect data")
	}
	shown := shownLabels(d)
	d.Source, d.Heading = escape.Label(d.Source), escape.Label(d.Heading)
	blob, err := json.Marshal(struct {
		Data
		ShownLabels    [][]string `json:"shown_labels"`
		ShownPredicted [][]string `json:"shown_predicted"`
	}{d, shown, shownPredicted(d)})
	if err != nil {
		return errors.Wrap(err, "html page: encoding the data")
	}
	// json.Marshal escapes <, > and & as \u003c..., so the blob cannot close
	// its script element; template.JS stops html/template re-escaping it.
	// escape.JSON writes the control and format characters it leaves raw
	// as \u escapes too: the page's bytes hold none, and the blob still
	// decodes to the real labels.
	blob = escape.JSON(blob)
	var buf bytes.Buffer
	err = page.Execute(&buf, struct {
		Title string
		CSS   template.CSS
		JS    template.JS
		Data  template.JS
	}{escape.Label(d.Title), template.CSS(pageCSS), template.JS(pageJS), template.JS(blob)})
	if err != nil {
		return errors.Wrap(err, "html page")
	}
	_, err = w.Write(buf.Bytes())
	return errors.Wrap(err, "writing the html page")
}

// shownLabels is the labels of every example as the page shows them
// (escape.Label), the inspect sequence's first, then Examples' in order.
func shownLabels(d Data) [][]string {
	out := [][]string{escape.Labels(d.Labels)}
	for _, ex := range d.Examples {
		out = append(out, escape.Labels(ex.Labels))
	}
	return out
}

// shownPredicted is the predictions' labels of every example as the page
// shows them (escape.Label), in shownLabels' order.
func shownPredicted(d Data) [][]string {
	out := [][]string{escape.Labels(d.PredictedLabels)}
	for _, ex := range d.Examples {
		out = append(out, escape.Labels(ex.PredictedLabels))
	}
	return out
}
