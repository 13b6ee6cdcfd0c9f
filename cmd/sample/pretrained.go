package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/tokenizer"
)

// writePretrained lets a model trained elsewhere write: -prompt (text in
// its tokenizer) or -tokens, else from its beginning-of-text token; -n
// tokens (pretrainedN by default) or until it writes its end of text, each
// streamed as it is picked, a character split across tokens held until it
// is whole. Its model card goes to notices first, as inspect words it.
func writePretrained(w, notices io.Writer, op *open.Opened, o options, samplesSet bool) error {
	if o.eval {
		return errors.Errorf("-eval scores a task's held-out set; %s (%s) has none: give -prompt", o.checkpoint, msg.Clean(op.Origin))
	}
	tok := op.Tokenizer
	prompt, err := pretrainedPrompt(notices, op, o)
	if err != nil {
		return err
	}
	if !samplesSet {
		o.samples = 1
	}
	plan, err := planContinuation(op.Model.Config, true, o.crop, prompt, o.n)
	if err != nil {
		return err
	}
	n := plan.n
	if err := (memoryBound{op.Model, !o.noCache}).checkPlan(o.samples, plan); err != nil {
		return err
	}
	sampler, err := generate.NewSampler(o.pick)
	if err != nil {
		return err
	}
	st, err := newStepper(op.Model, o.samples, len(prompt), plan, !o.noCache, notices)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(notices, "model: %s\n", op.Model.Config.Card()) // what was built of the files, as inspect's card says it
	out := &textRows{w: w, tok: tok, ends: op.EOS, raw: o.raw, n: n, prompt: string(tokenizer.Decode(tok, echoed(tok, prompt, o.raw || o.tokens != ""))), rows: make([]textRow, o.samples)}
	prompts, ns := make([][]int, o.samples), make([]int, o.samples)
	for i := range prompts {
		prompts[i], ns[i] = plan.feed, n
		out.rows[i].stream = tokenizer.NewStream(tok)
	}
	if err := out.start(); err != nil {
		return err
	}
	if _, err := generate.StreamUntil(st, prompts, ns, sampler, op.Model.Config.Vocab, op.EOS, out.emit); err != nil {
		io.WriteString(w, "\n") // ends the line the first row was streaming on
		return errors.Wrapf(err, "%s", o.checkpoint)
	}
	return nil
}

// pretrainedPrompt is -prompt in the tokenizer, -tokens, the
// beginning-of-text token alone, or else "\n" (as nanoGPT's sample.py
// starts) when the vocabulary has it, said on notices.
func pretrainedPrompt(notices io.Writer, op *open.Opened, o options) ([]int, error) {
	var ids []int
	var err error
	switch tok := op.Tokenizer; {
	case o.tokens != "":
		ids, err = cli.ParseTokens(o.tokens, open.TokenNames(op))
	case o.prompt != "":
		if ids, err = tok.Encode(o.prompt); err != nil {
			return nil, errors.Wrap(err, o.promptFlag)
		}
	case tok.BOS() >= 0:
		ids = []int{tok.BOS()}
	default:
		newline, encodeErr := tok.Encode("\n")
		if encodeErr != nil || len(newline) != 1 {
			return nil, errors.Errorf("%s's tokenizer has no beginning-of-text token and no newline to start from: give -prompt or -tokens", o.checkpoint)
		}
		fmt.Fprintf(notices, "note: %s's tokenizer has no beginning-of-text token; starting from a newline, as nanoGPT's sample.py does (-prompt starts elsewhere)\n", o.checkpoint)
		ids = newline
	}
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if id < 0 || id >= op.Model.Config.Vocab {
			return nil, errors.Errorf("%s: token %d at position %d is outside the vocabulary [0, %d)", o.promptFlag, id, i, op.Model.Config.Vocab)
		}
	}
	return ids, nil
}

// echoed is the prompt as printed before the continuation: without the
// beginning-of-text token it starts with (the one a model starts from, or
// Encode puts first), which is a mark rather than text, as Hugging Face's
// decode(skip_special_tokens=True) leaves it out; keep (-raw, or ids the
// user gave with -tokens) writes it, its name in the tokenizer's bytes.
func echoed(tok tokenizer.Tokenizer, prompt []int, keep bool) []int {
	if !keep && len(prompt) > 0 && prompt[0] == tok.BOS() {
		return prompt[1:]
	}
	return prompt
}

// textRows prints -samples continuations of one prompt in a tokenizer's
// text as generate hands their tokens over: the first row's as each is
// picked, the others whole once done (as continuations does for the lab's
// models); an end-of-text token (any of ends) ends a row unprinted.
type textRows struct {
	w      io.Writer
	tok    tokenizer.Tokenizer
	ends   []int
	raw    bool
	n      int
	prompt string
	rows   []textRow
}

type textRow struct {
	stream *tokenizer.Stream
	text   strings.Builder
}

func (t *textRows) show(b []byte) string {
	if t.raw {
		return string(b)
	}
	return escape.Text(string(b))
}

func (t *textRows) head(row int) string {
	if len(t.rows) == 1 {
		return t.show([]byte(t.prompt))
	}
	return fmt.Sprintf("--- sample %d\n%s", row+1, t.show([]byte(t.prompt)))
}

func (t *textRows) start() error {
	if _, err := io.WriteString(t.w, t.head(0)); err != nil {
		return err
	}
	return flush(t.w)
}

// emit takes the newest token of row, written so far.
func (t *textRows) emit(row int, written []int) error {
	r := &t.rows[row]
	id, done := written[len(written)-1], len(written) == t.n
	var piece []byte
	if slices.Contains(t.ends, id) {
		done = true
	} else {
		piece = r.stream.Push(id)
	}
	if done {
		piece = append(piece, r.stream.Flush()...)
	}
	text := t.show(piece)
	if done {
		text += "\n"
	}
	if row == 0 {
		if _, err := io.WriteString(t.w, text); err != nil {
			return err
		}
		return flush(t.w)
	}
	if r.text.Len() == 0 {
		r.text.WriteString(t.head(row))
	}
	r.text.WriteString(text)
	if !done {
		return nil
	}
	if _, err := io.WriteString(t.w, r.text.String()); err != nil {
		return err
	}
	return flush(t.w)
}
