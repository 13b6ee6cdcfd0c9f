package rundir

import (
	"fmt"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// Pretrained is the model a fine-tuning run starts from, as its config
// needs it: the model's config and the record of what was read.
type Pretrained struct {
	Model  model.Config
	Record initfrom.Record
}

// OpenPretrained opens the pretrained model that init_from names (package
// train's OpenPretrained, through package open).
type OpenPretrained func(initFrom string) (Pretrained, error)

// FineTunes reports whether the run starts from a pretrained model.
func (c Config) FineTunes() bool { return c.InitFrom != "" }

// fromPretrained decodes a config that names init_from over the pretrained
// model's config, after checking what it can without the model, so that a
// bad train.lr is refused before the weights are read. The model section
// may repeat the pretrained model's values; a key that disagrees is
// refused naming it and both values; model.dropout and model.attention
// (training's dropout, the graph's ops) may differ.
func fromPretrained(name string, src []byte, sets []string, dec decoder, first Config, open OpenPretrained) (Config, error) {
	if open == nil {
		return Config{}, errors.Errorf("%s: init_from = %s names a pretrained model, which only train opens", name, msg.Quote(first.InitFrom))
	}
	if err := first.checkWithoutModel(); err != nil {
		return Config{}, errors.Wrap(err, source(name, sets, err))
	}
	pre, err := open(first.InitFrom)
	if err != nil {
		return Config{}, errors.Wrapf(err, "init_from = %s", msg.Quote(first.InitFrom))
	}
	base := DefaultConfig()
	path := base.Model.Attention // the graph's ops are the run's, as for any run
	base.Model = pre.Model
	base.Model.Attention = path
	cfg, err := dec.decode(base, name, src, sets)
	if err != nil {
		return Config{}, err
	}
	given := cfg.Model
	given.Dropout, given.Attention = pre.Model.Dropout, pre.Model.Attention
	if diff := ConfigDiff(Config{Model: given}, Config{Model: pre.Model}, "given", "pretrained"); diff != "" {
		return Config{}, errors.Errorf("init_from = %s: the model section disagrees with the pretrained model (%s); leave the model section out (only model.dropout and model.attention may differ)",
			msg.Quote(first.InitFrom), diff)
	}
	cfg.Init = pre.Record
	return cfg, nil
}

// checkWithoutModel is what Validate checks of a fine-tuning config before
// the pretrained model is read: the task and the train section.
func (c Config) checkWithoutModel() error {
	if err := c.checkFineTuneTask(); err != nil {
		return err
	}
	if err := c.Task.Validate(); err != nil {
		return err
	}
	return c.Train.validate()
}

// checkFineTuneTask refuses a fine-tuning run on anything but text, and
// keys it cannot use.
func (c Config) checkFineTuneTask() error {
	switch {
	case c.Task.Name != data.Text:
		return errors.Errorf("init_from = %s: task.name = %s, but fine-tuning trains on text (task: {name: text, path: FILE, length: T}), tokenized with the pretrained model's tokenizer",
			msg.Quote(c.InitFrom), msg.Quote(c.Task.Name))
	case c.Task.Chars != "":
		return errors.New("task.chars: a fine-tuning run's text is the pretrained model's tokens, not characters")
	case len(c.Train.EvalLengths) > 0:
		return errors.Errorf("train.eval_lengths = %v: not with init_from (a pretrained model's text is evaluated at task.length)", c.Train.EvalLengths)
	}
	return nil
}

// validateFineTune is Validate's check of the model and the task of a
// fine-tuning run: the record of the pretrained model, and windows of
// task.length tokens the model can read.
func (c Config) validateFineTune() error {
	if err := c.checkFineTuneModel(); err != nil {
		return err
	}
	if err := c.Train.validate(); err != nil {
		return err
	}
	return c.checkFineTuneMemory(model.MemAvailableHere())
}

// checkFineTuneMemory bounds a fine-tuning run's memory in two parts. The
// graphs and the held-out set, which the train section sizes, are held to
// MaxMemory, as a lab run is: that catches a typo such as batch_size: 32000.
// The weights, their gradients and Adam's moments are the pretrained
// model's, which the user chose: with the graphs they must fit the memory
// the machine has available (avail, model.MemAvailableHere: the weights
// this process has already read count as its own; nothing is checked when
// known is false), as mapped weights must (model.CheckResident). So GPT-2
// medium's shape, whose estimate passes 8 GiB, fine-tunes on a 16 GB
// machine.
func (c Config) checkFineTuneMemory(avail float64, known bool) error {
	est := c.EstimateBytes()
	mem := c.Memory()
	fixed := mem.Weights + mem.Gradients + mem.Moments
	if err := model.CheckMemory(est-fixed, fmt.Sprintf("fine-tuning %s with the graphs of %d training windows of %d tokens and the evaluation (besides %s of weights, gradients and Adam moments)",
		c.Init.Source, c.Train.BatchSize, c.Task.Length, msg.Bytes(fixed)), "reduce train.batch_size, train.eval_size or task.length"); err != nil || !known {
		return err
	}
	what := fmt.Sprintf("fine-tuning %s (%s of weights, gradients and Adam moments, %s of graphs)", c.Init.Source, msg.Bytes(fixed), msg.Bytes(est-fixed))
	if err := model.CheckResidentWithin(est, avail, what); err != nil {
		return errors.Errorf("%s; reduce train.batch_size, train.eval_size or task.length, or fine-tune a smaller model", err)
	}
	return nil
}

// checkFineTuneModel checks what reading a fine-tuned model needs: the
// task, the model, the record, and task.length within a learned position
// table.
func (c Config) checkFineTuneModel() error {
	if err := c.checkFineTuneTask(); err != nil {
		return err
	}
	if err := c.Task.Validate(); err != nil {
		return err
	}
	if err := c.Model.Validate(); err != nil {
		return err
	}
	switch r := c.Init; {
	case !r.Recorded():
		return errors.Errorf("init_from = %s: the run config holds no record of the pretrained model (init)", msg.Quote(c.InitFrom))
	case r.Vocab != c.Model.Vocab || r.Context != c.Model.Context:
		return errors.Errorf("init: vocab %d and context %d, but the model has %d and %d", r.Vocab, r.Context, c.Model.Vocab, c.Model.Context)
	case len(r.Files) == 0:
		return errors.New("init.files: empty; a run records every file of the pretrained model it read")
	}
	for _, name := range c.Init.Tokenizer {
		if !slices.Contains(initfrom.TokenizerNames, name) {
			return errors.Errorf("init.tokenizer: %s is not a tokenizer file (want one of %v)", msg.Quote(name), initfrom.TokenizerNames)
		}
		if _, ok := c.Init.TokenizerFile(name); !ok {
			return errors.Errorf("init.tokenizer names %s, which init.files does not list", msg.Quote(name))
		}
	}
	if limit := c.Model.MaxLength(); limit > 0 && c.Task.Length > limit {
		return errors.Errorf("task.length = %d: longer than the pretrained model's context of %d (its learned position table)", c.Task.Length, limit)
	}
	return nil
}
