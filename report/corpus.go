package report

import (
	"fmt"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/tokenizer"
)

// MaxCorpusWindows is the most windows -corpus scores (analysis').
const MaxCorpusWindows = analysis.MaxCorpusWindows

// CorpusOptions are what inspect -corpus asks: the text file (its name, for
// messages, and its bytes, ReadCorpus'), the windows scored, their length
// in tokens (0: DefaultWindowLength, or the model's context when shorter)
// and their seed, and a callback that hears the windows scored (nil:
// none).
type CorpusOptions struct {
	Checkpoint, File string
	Text             []byte
	Windows, Length  int
	Seed             uint64
	Progress         func(done, total int)
}

// DefaultWindowLength is -window-length's default.
const DefaultWindowLength = 128

// CorpusDocument is what -corpus -json prints.
type CorpusDocument struct {
	Checkpoint string          `json:"checkpoint"`
	Tokenizer  string          `json:"tokenizer"`
	File       string          `json:"corpus_file"`
	Corpus     analysis.Corpus `json:"corpus"`
}

// ReadCorpus reads the text -corpus names: a regular file of UTF-8 text.
func ReadCorpus(path string) ([]byte, error) {
	text, err := data.ReadUTF8(path, "-corpus reads")
	return text, errors.Wrapf(err, "-corpus %s", msg.Quote(path))
}

// Corpus scores every head of s over o.Windows windows of o.Text in the
// model's tokenizer (analysis.CorpusHeads), refusing a model without one.
func Corpus(s Subject, o CorpusOptions) (*CorpusDocument, error) {
	if s.Tokenizer == nil {
		return nil, errors.Errorf("-corpus: %s's task (%s) has no tokenizer to read a text with; give a text model or a model trained elsewhere", o.Checkpoint, s.Task.Name())
	}
	ids, err := s.Tokenizer.Encode(string(o.Text))
	if errors.Is(err, tokenizer.ErrNoTokenizer) {
		why := "it came with no tokenizer files"
		var notBuilt *tokenizer.NotBuiltError
		if errors.As(err, &notBuilt) {
			why = notBuilt.Why.Error()
		}
		return nil, errors.Errorf("-corpus: %s opened without a tokenizer to read the text with (%s)", o.Checkpoint, why)
	}
	if err != nil {
		return nil, errors.Wrapf(err, "-corpus %s", msg.Quote(o.File))
	}
	length := o.Length
	if length == 0 {
		length = DefaultWindowLength
		if limit := s.Model.Config.MaxLength(); limit > 0 {
			length = min(length, limit)
		}
	}
	c, err := analysis.CorpusHeads(s.Model, ids, analysis.CorpusOptions{Windows: o.Windows, Length: length, Seed: o.Seed, Progress: o.Progress})
	if err != nil {
		return nil, errors.Wrapf(err, "-corpus %s -window-length %d", msg.Quote(o.File), length)
	}
	return &CorpusDocument{Checkpoint: o.Checkpoint, Tokenizer: s.Tokenizer.Name(), File: o.File, Corpus: *c}, nil
}

// corpusColumns are the view's short names of heads.CorpusStats.
var corpusColumns = []string{"prev", "dup", "induction", "first", "self", "entropy"}

// View is the document's text view.
func (d *CorpusDocument) View() render.CorpusView {
	c := d.Corpus
	v := render.CorpusView{Columns: corpusColumns, Lower: slices.Index(heads.CorpusStats, heads.EntropyStat),
		Title: fmt.Sprintf("head statistics of %s over %s of %d tokens drawn with seed %d from %s, %d tokens in %s: each score's mean±standard deviation over the windows",
			msg.Clean(d.Checkpoint), msg.Count(c.Windows, "window"), c.Length, c.Seed, msg.Clean(d.File), c.Tokens, d.Tokenizer),
		Notes: []string{"scores as TransformerLens's head detector's: the share of a head's attention on the previous token (prev), on earlier copies of the current token (dup), on the tokens after them (induction), on the window's first token, the attention sink (first), on itself (self); entropy: of each row in nats"}}
	for _, h := range c.Heads {
		row := render.CorpusRow{Layer: h.Layer, Head: h.Head}
		for _, s := range h.Scores {
			row.Mean, row.SD = append(row.Mean, s.Mean), append(row.SD, s.SD)
		}
		v.Heads = append(v.Heads, row)
	}
	return v
}
