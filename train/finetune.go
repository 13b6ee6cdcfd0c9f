package train

import (
	"io"
	"reflect"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/rundir"
)

// Pretrained is the model a fine-tuning run starts from (init_from),
// opened by package open: its weights and tokenizer, and the record of the
// files read (their SHA-256 among it).
type Pretrained struct {
	Opened *open.Opened
	Record initfrom.Record
}

// OpenPretrained opens the model trained elsewhere that initFrom names,
// for a run that fine-tunes it; notices receives a line per file read.
func OpenPretrained(initFrom string, notices io.Writer) (*Pretrained, error) {
	op, rec, err := open.ForFineTuning(initFrom, open.Options{Notices: notices})
	if err != nil {
		return nil, err
	}
	return &Pretrained{Opened: op, Record: rec}, nil
}

// Config is what the run config takes of p (rundir.LoadConfigFrom).
func (p *Pretrained) Config() rundir.Pretrained {
	return rundir.Pretrained{Model: p.Opened.Model.Config, Record: p.Record}
}

// fineTuneTask is the text task of a fine-tuning run, read through the
// pretrained model's tokenizer: on resume the run directory's copy of it
// (open.RunTokenizer), else the model's own, opened here unless the caller
// opened it for the config (Options.Pretrained). The pretrained model
// opened is returned for a fresh run to start from.
func fineTuneTask(cfg rundir.Config, taskCfg data.TaskConfig, opts Options) (data.Task, *Pretrained, error) {
	if opts.Resume {
		tok, err := open.RunTokenizer(opts.Dir, cfg)
		if err != nil {
			return nil, nil, err
		}
		task, err := data.NewTokenText(taskCfg, tok, cfg.Model.Vocab)
		return task, nil, err
	}
	pre := opts.Pretrained
	if pre == nil || !reflect.DeepEqual(pre.Record, cfg.Init) {
		var err error
		if pre, err = reopenPretrained(cfg, opts.Notices); err != nil {
			return nil, nil, err
		}
	}
	task, err := data.NewTokenText(taskCfg, pre.Opened.Tokenizer, cfg.Model.Vocab)
	return task, pre, err
}

// reopenPretrained opens the pretrained model of a run again (a run
// killed before its first checkpoint starts from it anew): every file it
// recorded is checked first, so a changed one is named rather than read,
// and the files read must be the ones recorded.
func reopenPretrained(cfg rundir.Config, notices io.Writer) (*Pretrained, error) {
	if err := cfg.Init.CheckFiles(); err != nil {
		return nil, errors.Wrapf(err, "init_from = %s", msg.Quote(cfg.InitFrom))
	}
	pre, err := OpenPretrained(cfg.Init.Path, notices)
	if err != nil {
		return nil, errors.Wrapf(err, "init_from = %s", msg.Quote(cfg.InitFrom))
	}
	if !reflect.DeepEqual(pre.Record, cfg.Init) {
		return nil, errors.Errorf("init_from = %s: %s now reads as another model or other files than the run recorded (%s, %d files); start a new run",
			msg.Quote(cfg.InitFrom), cfg.Init.Path, pre.Record.Source, len(pre.Record.Files))
	}
	return pre, nil
}

// pretrainedModel is the model of pre as the run trains it: the run's
// dropout and attention path, every other setting the pretrained model's.
func pretrainedModel(pre *Pretrained, cfg rundir.Config) (*model.Model, error) {
	m := pre.Opened.Model
	m.Config.Dropout, m.Config.Attention = cfg.Model.Dropout, cfg.Model.Attention
	if m.Config != cfg.Model {
		return nil, errors.Errorf("init_from = %s: the pretrained model is not the one the run config describes", msg.Quote(cfg.InitFrom))
	}
	if m.Dtype != modelDtype {
		return nil, errors.Errorf("init_from = %s: opened with %v weights, runs train %v", msg.Quote(cfg.InitFrom), m.Dtype, modelDtype)
	}
	return m, nil
}
