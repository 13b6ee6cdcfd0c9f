package htmlview

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/escape/escapetest"
	"github.com/attnscope/attnscope/runlog"
)

// small is a one-layer, one-head model on a two-token sequence, with a label
// that tries to close the data script.
func small() Data {
	one := 1
	return Data{
		Title: "attnscope: t, step 3", Checkpoint: "c.safetensors", Step: 3, Task: "t", Dtype: "float32", Params: 10,
		Model:    map[string]any{"layers": 1, "heads": 1},
		Inspect:  json.RawMessage(`{"tokens":[0,1],"labels":["a","</script><script>alert(1)</script>"],"blocks":"attention-only blocks"}`),
		Labels:   []string{"a", "</script><script>alert(1)</script>"},
		Maps:     [][]string{{EncodeMap([][]float64{{1, 0}, {0.25, 0.75}})}},
		RoleNote: "pooled over 1 example",
		Examples: []Example{{Source: "held-out 0", Tokens: []int{1, 0}, Labels: []string{"b", "a"}, Targets: []*int{nil, &one},
			Maps: [][]string{{EncodeMap([][]float64{{1, 0}, {0.5, 0.5}})}}, Logits: [][]float64{{0, 1}, {1, 0}}, Predictions: []int{1, 1}}},
		Graph:      map[string]any{"path": "fused", "rows": []any{map[string]any{"name": "loss", "op": "Sum", "shape": []int{}, "params": 0, "builtin": true}}},
		GraphBatch: 1, GraphLength: 2,
		Training: &Training{Dir: "run", Stride: 1, Train: []runlog.TrainRecord{{Step: 1, Loss: 2}}, Eval: []runlog.EvalRecord{{Step: 1, EvalLoss: 2, TokenAcc: 0.5}},
			Heads: [][]runlog.HeadHistory{{{Layer: 0, Head: 0, Role: "self", Steps: []int{1}, Scores: []float64{0.25}}}}},
	}
}

func render(t *testing.T, d Data) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, d); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

var (
	styleBody  = regexp.MustCompile(`(?s)<style>.*?</style>`)
	dataBody   = regexp.MustCompile(`(?s)(<script id="data" type="application/json">)(.*?)(</script>)`)
	scriptBody = regexp.MustCompile(`(?s)<script>.*?</script>`)
)

// skeleton is the page with its style and script bodies elided and its data
// reduced to the data's top-level keys.
func skeleton(t *testing.T, page string) []byte {
	t.Helper()
	m := dataBody.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data script")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(m[2]), &top); err != nil {
		t.Fatalf("the data script is not one JSON object: %v", err)
	}
	var keys []string
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := dataBody.ReplaceAllString(page, "${1}{"+strings.Join(keys, " ")+"}${3}")
	s = styleBody.ReplaceAllString(s, "<style>(page.css)</style>")
	s = scriptBody.ReplaceAllString(s, "<script>(page.js)</script>")
	return []byte(s)
}

// TestPageIsItsTemplate: the page is page.html with its four actions
// filled and nothing else changed: the title (escaped like any text), the
// style, the script, and the data, whose top-level keys are pinned here.
func TestPageIsItsTemplate(t *testing.T) {
	d := small()
	d.Title = "<b> & c"
	want := strings.NewReplacer(
		"{{.Title}}", "&lt;b&gt; &amp; c",
		"{{.CSS}}", "(page.css)",
		"{{.JS}}", "(page.js)",
		"{{.Data}}", "{checkpoint dtype examples graph graph_batch graph_length heading inspect maps model params predicted_labels role_note shown_labels shown_predicted step task title training}",
	).Replace(pageHTML)
	if got := string(skeleton(t, render(t, d))); got != want {
		t.Errorf("the page differs from page.html with its actions filled:\n--- got\n%s\n--- want\n%s", got, want)
	}
}

// TestDataStaysData: a label holding "</script>" cannot end the data script;
// the page has exactly its two scripts, and the blob decodes back to the label.
func TestDataStaysData(t *testing.T) {
	page := render(t, small())
	if n := strings.Count(page, "</script>"); n != 2 {
		t.Errorf("%d </script> tags, want 2", n)
	}
	m := dataBody.FindStringSubmatch(page)
	var d struct {
		Inspect struct {
			Labels []string `json:"labels"`
		} `json:"inspect"`
	}
	if err := json.Unmarshal([]byte(m[2]), &d); err != nil {
		t.Fatal(err)
	}
	if want := "</script><script>alert(1)</script>"; len(d.Inspect.Labels) != 2 || d.Inspect.Labels[1] != want {
		t.Errorf("labels %q, want the second to be %q", d.Inspect.Labels, want)
	}
}

// TestScriptFindsItsElements: every element the script looks up by id
// ($("...")) exists in the page, so a renamed element fails here and not only
// in a browser.
func TestScriptFindsItsElements(t *testing.T) {
	page := render(t, small())
	ids := regexp.MustCompile(`\$\("([^"]+)"\)`).FindAllStringSubmatch(pageJS, -1)
	if len(ids) < 10 {
		t.Fatalf("found only %d element lookups in page.js", len(ids))
	}
	for _, m := range ids {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("page.js looks up #%s, which the page does not have", m[1])
		}
	}
}

func TestWriteNeedsInspectData(t *testing.T) {
	d := small()
	d.Inspect = nil
	if err := Write(&bytes.Buffer{}, d); err == nil || !strings.Contains(err.Error(), "no inspect data") {
		t.Errorf("Write without inspect data: %v", err)
	}
}

// TestPageEscapesLabels: labels holding control, C1 and bidi characters
// reach the page's bytes only as \u escapes (newline and tab lay the page
// out and are allowed), the blob decodes back to the real labels, and the
// labels the page shows are their visible escapes.
func TestPageEscapesLabels(t *testing.T) {
	hostile := []string{"\x1b[2J", "\u009b31m", "\u009d0;x\u009c", "\u0090q", "\u0085", "\u202eabc", "\u2066", "\u200f", "\u200b", "\ufeff", "\x7f", "\r\a"}
	d := small()
	inspect, err := json.Marshal(map[string]any{"tokens": []int{0, 1}, "labels": hostile[:2]})
	if err != nil {
		t.Fatal(err)
	}
	d.Inspect, d.Labels, d.Examples[0].Labels = inspect, hostile[:2], hostile[2:]
	d.PredictedLabels, d.Examples[0].PredictedLabels = hostile[:2], hostile[2:4]
	d.Source, d.Heading = "fine-tuned from "+hostile[5], "model m: fine-tuned from "+hostile[0]
	page := render(t, d)
	escapetest.Check(t, "the page", []byte(page), "\n\t")
	var blob struct {
		Inspect struct {
			Labels []string `json:"labels"`
		} `json:"inspect"`
		Examples []struct {
			Labels []string `json:"labels"`
		} `json:"examples"`
		ShownLabels    [][]string `json:"shown_labels"`
		ShownPredicted [][]string `json:"shown_predicted"`
		Source         string     `json:"source"`
		Heading        string     `json:"heading"`
	}
	if err := json.Unmarshal([]byte(dataBody.FindStringSubmatch(page)[2]), &blob); err != nil {
		t.Fatal(err)
	}
	if blob.Source != `fine-tuned from \u202eabc` || blob.Heading != `model m: fine-tuned from \x1b[2J` {
		t.Errorf("the source reads %q and the heading %q, want them escaped", blob.Source, blob.Heading)
	}
	if want := [][]string{escape.Labels(hostile[:2]), escape.Labels(hostile[2:4])}; !slices.EqualFunc(blob.ShownPredicted, want, slices.Equal) {
		t.Errorf("the predictions are shown as %q, want %q", blob.ShownPredicted, want)
	}
	real := append(slices.Clone(blob.Inspect.Labels), blob.Examples[0].Labels...)
	if !slices.Equal(real, hostile) {
		t.Errorf("the blob's labels are %q, want %q", real, hostile)
	}
	if len(blob.ShownLabels) != 2 {
		t.Fatalf("shown labels for %d examples, want 2", len(blob.ShownLabels))
	}
	shown := append(slices.Clone(blob.ShownLabels[0]), blob.ShownLabels[1]...)
	for i, l := range hostile {
		if want := escape.Label(l); shown[i] != want {
			t.Errorf("label %q is shown as %q, want %q", l, shown[i], want)
		}
	}
	if shown[5] != `\u202eabc` {
		t.Errorf("the override is shown as %q", shown[5])
	}
}

// TestPageLabelsAreData: the page shows the labels Data.Labels gives and
// never decodes the inspect document for them (here it holds none, and
// other labels would be wrong).
func TestPageLabelsAreData(t *testing.T) {
	d := small()
	d.Inspect = json.RawMessage(`{"tokens":[0,1],"labels":["wrong","wrong"]}`)
	d.Labels = []string{"x", "y"}
	var blob struct {
		ShownLabels [][]string `json:"shown_labels"`
	}
	if err := json.Unmarshal([]byte(dataBody.FindStringSubmatch(render(t, d))[2]), &blob); err != nil {
		t.Fatal(err)
	}
	if len(blob.ShownLabels) == 0 || !slices.Equal(blob.ShownLabels[0], d.Labels) {
		t.Errorf("the page shows the labels %q, want %q first", blob.ShownLabels, d.Labels)
	}
}
