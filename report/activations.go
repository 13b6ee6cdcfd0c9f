package report

import (
	"io"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// checkSave resolves Options.Activations into the activations to save
// (analysis.SaveNames), refusing a name the model does not have and a
// file beyond the memory limit, before any graph is built.
func (r *Report) checkSave(m *model.Model) error {
	if len(r.Options.Activations) == 0 {
		return nil
	}
	saved, err := analysis.SaveNames(r.Config, r.Options.Activations)
	if err != nil {
		return errors.Wrap(err, "-activations")
	}
	// The run keeps them, TransformerLens's layout copies each, and the
	// file's bytes are a third copy.
	bytes := 3 * analysis.SavedBytes(m, saved, 1, len(r.Sequence.Tokens))
	if err := model.CheckMemory(bytes, "-save-activations: the activations asked", "ask for fewer with -activations"); err != nil {
		return err
	}
	r.saved = saved
	return nil
}

// runSaved runs the model on the sequence shown keeping the activations
// to save: a forward of its own, batch 1, whatever the views ran.
func (r *Report) runSaved(m *model.Model) error {
	if len(r.saved) == 0 {
		return nil
	}
	r.phase("running the model for -save-activations", 0, 0, "")
	names := make([]string, len(r.saved))
	for i, s := range r.saved {
		names[i] = s.Lab
	}
	s := r.Sequence
	b := &data.Batch{Size: 1, SeqLen: len(s.Tokens), Tokens: s.Tokens, Targets: s.Targets, Mask: s.Scored}
	var err error
	r.savedRun, err = analysis.RunWithCache(m, b, names...)
	return errors.Wrap(err, "-save-activations")
}

// WriteActivations writes the activations Options.Activations names, of
// the sequence shown, as one safetensors file (analysis.WriteActivations:
// TransformerLens's layouts, batch first), its tokens' labels as the views
// show them, and their raw texts for a model that reads text, in the
// metadata. The command writes it by the output rule.
func (r *Report) WriteActivations(w io.Writer) error {
	if r.savedRun == nil {
		return errors.New("no activations to save: Options.Activations names none")
	}
	tokens := r.Sequence.Tokens
	labelled := map[string][][]string{"labels": {labels(r.Task, tokens)}}
	if texts, _ := tokenTexts(r.tok, tokens); texts != nil {
		labelled["texts"] = [][]string{texts}
	}
	return analysis.WriteActivations(w, r.savedRun, r.saved, labelled)
}

// ActivationsFlag is the flag.Func parser of -activations into names:
// names or globs, comma-separated, none empty.
func ActivationsFlag(names *[]string) func(string) error {
	return func(v string) error {
		*names = nil
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				return errors.Errorf(`%s holds an empty name: give names or globs separated by commas, e.g. "blocks.*.hook_resid_post,blocks.0.attn.hook_pattern"`, msg.Quote(v))
			}
			*names = append(*names, name)
		}
		return nil
	}
}
