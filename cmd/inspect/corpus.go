package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/progress"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/tokenizer"
)

// Defaults of -windows and -window-length.
const (
	defaultCorpusWindows = 100
	defaultWindowLength  = 128
)

// corpusFlags are the flags -corpus combines with; any other is refused.
var corpusFlags = []string{"checkpoint", "corpus", "windows", "window-length", "seed", "json", "path", "color", "data", "vocab"}

// corpusColumns are the view's short names of heads.CorpusStats.
var corpusColumns = []string{"prev", "dup", "induction", "first", "self", "entropy"}

// corpusDocument is what -corpus -json prints.
type corpusDocument struct {
	Checkpoint string          `json:"checkpoint"`
	Tokenizer  string          `json:"tokenizer"`
	File       string          `json:"corpus_file"`
	Corpus     analysis.Corpus `json:"corpus"`
}

// checkCorpusFlags refuses -windows or -window-length without -corpus, a
// flag -corpus does not combine with, and counts out of range, before
// anything is read.
func checkCorpusFlags(fs *flag.FlagSet, o options) error {
	set := cli.Given(fs)
	for _, name := range []string{"windows", "window-length"} {
		if set[name] && o.corpus == "" {
			return errors.Errorf("-%s is used only with -corpus FILE (add -corpus, or drop -%s)", name, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		if !slices.Contains(corpusFlags, name) {
			return errors.Errorf("-corpus scores the heads over windows of a text and prints their statistics; it does not combine with -%s", name)
		}
	}
	switch {
	case o.windows < 1 || o.windows > analysis.MaxCorpusWindows:
		return errors.Errorf("-windows %d: must be in [1, %d]", o.windows, analysis.MaxCorpusWindows)
	case o.windowLength < 2:
		return errors.Errorf("-window-length %d: must be at least 2 (a head chooses among keys from the second position on)", o.windowLength)
	}
	return nil
}

// showCorpus scores every head over -windows windows of -corpus in the
// model's tokenizer and prints each statistic's mean and spread, as text
// or -json, the windows scored a phase of line (nil: none).
func showCorpus(o options, fs *flag.FlagSet, stdout io.Writer, line *progress.Line) error {
	if err := checkCorpusFlags(fs, o); err != nil {
		return err
	}
	if _, err := colorMode(o.color, stdout); err != nil {
		return err // the view has no colour, but -color is checked as the others' is
	}
	text, err := data.ReadUTF8(o.corpus, "-corpus reads")
	if err != nil {
		return errors.Wrapf(err, "-corpus %s", msg.Quote(o.corpus))
	}
	fmt.Fprintf(o.notices, "reading %s (%s)\n", msg.Clean(o.corpus), msg.Bytes(float64(len(text))))
	op, err := open.Open(o.r.Checkpoint, o.openOptions())
	if err != nil {
		return err
	}
	if err := op.UsePath(o.path); err != nil {
		return err
	}
	if op.Tokenizer == nil {
		return errors.Errorf("-corpus: %s's task (%s) has no tokenizer to read a text with; give a text model or a model trained elsewhere", o.r.Checkpoint, op.Task.Name())
	}
	ids, err := op.Tokenizer.Encode(string(text))
	if errors.Is(err, tokenizer.ErrNoTokenizer) {
		why := "it came with no tokenizer files"
		var notBuilt *tokenizer.NotBuiltError
		if errors.As(err, &notBuilt) {
			why = notBuilt.Why.Error()
		}
		return errors.Errorf("-corpus: %s opened without a tokenizer to read the text with (%s)", o.r.Checkpoint, why)
	}
	if err != nil {
		return errors.Wrapf(err, "-corpus %s", msg.Quote(o.corpus))
	}
	length := o.windowLength
	if !cli.Given(fs)["window-length"] {
		length = defaultWindowLength
		if limit := op.Model.Config.MaxLength(); limit > 0 {
			length = min(length, limit)
		}
	}
	co := analysis.CorpusOptions{Windows: o.windows, Length: length, Seed: o.r.Seed}
	if line != nil {
		co.Progress = func(done, total int) { line.Update("scoring heads over windows", int64(done), int64(total), "windows") }
	}
	c, err := analysis.CorpusHeads(op.Model, ids, co)
	if err != nil {
		return errors.Wrapf(err, "-corpus %s -window-length %d", msg.Quote(o.corpus), length)
	}
	if line != nil {
		line.Finish()
	}
	if o.json {
		return writeJSONLine(stdout, corpusDocument{Checkpoint: o.r.Checkpoint, Tokenizer: op.Tokenizer.Name(), File: o.corpus, Corpus: *c})
	}
	return render.WriteCorpus(stdout, corpusView(o, op.Tokenizer.Name(), c), width(stdout))
}

// corpusView is the text view of c.
func corpusView(o options, tokenizerName string, c *analysis.Corpus) render.CorpusView {
	v := render.CorpusView{Columns: corpusColumns, Lower: slices.Index(heads.CorpusStats, heads.EntropyStat),
		Title: fmt.Sprintf("head statistics of %s over %s of %d tokens drawn with seed %d from %s, %d tokens in %s: each score's mean±standard deviation over the windows",
			msg.Clean(o.r.Checkpoint), msg.Count(c.Windows, "window"), c.Length, c.Seed, msg.Clean(o.corpus), c.Tokens, tokenizerName),
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
