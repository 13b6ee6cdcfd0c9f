package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render/htmlview"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// MaxSamples bounds Options.Samples: the scoring batch holds Layers x
// samples x H x T x T attention weights at once, and a slip of the finger
// should not ask for gigabytes.
const MaxSamples = 4096

// checkSamples refuses a number of scoring examples out of range.
func checkSamples(n int) error {
	if n < 1 || n > MaxSamples {
		return errors.Errorf("-examples %d: must be in [1, %d]", n, MaxSamples)
	}
	return nil
}

// checkMemory refuses a number of scoring examples of t tokens whose batch
// would not fit: the weights and the values of its forward run once with
// every map kept (ViewBytes), and the cache's copy of every attention map
// ScoreHeads reads, in the model's dtype (elem bytes a value).
func checkMemory(cfg model.Config, elem, t, samples int) error {
	at := cfg
	at.Context = t
	maps := float64(cfg.Layers) * float64(cfg.Heads) * float64(samples) * float64(t) * float64(t)
	return model.CheckMemory(at.ViewBytes(samples, true)+float64(elem)*maps,
		fmt.Sprintf("-examples %d: scoring the heads of this model (%s of %s) on examples of %s", samples, msg.Count(cfg.Layers, "layer"), msg.Count(cfg.Heads, "head"), msg.Count(t, "token")),
		"use a smaller -examples")
}

// checkCircuitsMemory refuses -circuits (when asked) where what its
// measures hold at once on the heads sel picks would not fit
// (analysis.CircuitsBytes: the picked heads' factors as float64, the
// composition of two consecutive picked layers, copying's circuits, direct
// logit attribution's output matrices), with the estimate and how to pick
// fewer heads.
func checkCircuitsMemory(cfg model.Config, circuits bool, sel Selection) error {
	if !circuits {
		return nil
	}
	return model.CheckMemory(analysis.CircuitsBytes(cfg, sel.Layers, sel.Heads),
		fmt.Sprintf("-circuits: composition, copying and the attribution on %s of %s picked (%s of %s in all)", msg.Count(len(sel.Layers), "layer"), msg.Count(len(sel.Heads), "head"), msg.Count(cfg.Layers, "layer"), msg.Count(cfg.Heads, "head")),
		"pick fewer heads with -layer and -head (e.g. -layer 0,5-7 -head 3)")
}

// checkSequenceMemory refuses tokens too many to inspect: the forward of
// one sequence of t positions run once, keeping its attention maps
// (Layers x Heads x t x t; ViewBytes), the float64 copy of the maps every
// view keeps, and the text -json and -html write them as (about 12 bytes
// each). Llama 3.1 8B's shape over 256 tokens: 2.6 GiB estimated, where
// -html peaked at 2.1 GiB of anonymous memory.
func checkSequenceMemory(cfg model.Config, t int, from string) error {
	at := cfg
	at.Context = t
	maps := float64(cfg.Layers) * float64(cfg.Heads) * float64(t) * float64(t)
	return model.CheckMemory(at.ViewBytes(1, true)+maps*(8+12),
		fmt.Sprintf("%s: inspecting %d tokens (attention maps of %s x %s x %d x %d positions)", from, t, msg.Count(cfg.Layers, "layer"), msg.Count(cfg.Heads, "head"), t, t),
		"give fewer tokens")
}

// checkTrainGraph refuses a training graph of batch sequences of seqLen
// positions that would exceed the memory limit, before it is built.
func checkTrainGraph(cfg model.Config, batch, seqLen int) error {
	at := cfg
	at.Context = seqLen // EstimateBytes counts a batch at the context's length
	return model.CheckMemory(at.EstimateBytes(batch, 0), fmt.Sprintf("-training-graph: the training graph of batch %d x %d positions", batch, seqLen), "-graph without -training-graph shows the forward graph")
}

// checkWindows refuses what needs examples of the task when a text model
// was opened without its text (a lone checkpoint without -data): only
// the tokens the user gives can be shown.
func checkWindows(task data.Task, userTokens []int, o Options) error {
	if data.HasWindows(task) {
		return nil
	}
	need := ""
	switch {
	case userTokens == nil:
		need = "the example shown (or give -tokens)"
	case o.Ablate:
		need = "-ablate"
	case o.Circuits:
		need = "-circuits"
	case o.Mean:
		need = "-mean"
	case o.Page:
		need = "the -html page's held-out examples"
	case o.Length != 0:
		need = "-length"
	default:
		return nil
	}
	return errors.Errorf("%s draws windows of the text %s was trained on: name that file with -data FILE", need, o.Checkpoint)
}

// lengthTask is the task whose example is shown: the checkpoint's, or at
// another length the run's task at that length (check refuses -length for
// a model trained elsewhere, which has no run), refused beyond a learned
// position table.
func lengthTask(task data.Task, run *rundir.Config, cfg model.Config, length int) (data.Task, error) {
	if length == 0 {
		return task, nil
	}
	at, err := data.AtLength(run.Task, length)
	if err != nil {
		return nil, errors.Wrapf(err, "-length %d", length)
	}
	if limit := cfg.MaxLength(); limit > 0 && at.SeqLen() > limit {
		return nil, errors.Errorf("-length %d: the example has %d positions, beyond the model's learned position table of %d (only sinusoidal, rope, alibi and no positions run at any length)", length, at.SeqLen(), limit)
	}
	return at, nil
}

// checkRunHeads refuses head roles through training recorded for another
// shape of model (a run directory of a different model): the page opens a
// head from its row.
func checkRunHeads(tr *htmlview.Training, cfg model.Config) error {
	if tr == nil || len(tr.Heads) == 0 {
		return nil
	}
	if len(tr.Heads) != cfg.Layers || len(tr.Heads[0]) != cfg.Heads {
		return errors.Errorf("%s: head roles of %d layers x %d heads, but the checkpoint has %d x %d (is it a file of another run?)",
			filepath.Join(tr.Dir, runlog.RolesFile), len(tr.Heads), len(tr.Heads[0]), cfg.Layers, cfg.Heads)
	}
	return nil
}

// checkRunConfig refuses to plot a run whose config.yaml is not the
// checkpoint's config (another run's curves under this model); for a model
// trained elsewhere, which no run here trained, any run's.
func checkRunConfig(tr *htmlview.Training, s Subject, checkpoint string) error {
	if tr == nil {
		return nil
	}
	if s.Run == nil {
		if _, err := os.Lstat(filepath.Join(tr.Dir, rundir.ConfigFile)); err == nil {
			return errors.Errorf("-run %s is another run; pass the checkpoint's own run directory: %s is a model trained elsewhere (%s), which no run here trained", tr.Dir, checkpoint, s.Origin)
		}
		return nil
	}
	if err := rundir.CheckBelongs(tr.Dir, *s.Run); err != nil {
		return errors.Wrapf(err, "-run %s is another run; pass the checkpoint's own run directory", tr.Dir)
	}
	return nil
}

// CheckRunPath refuses a file given as a run directory, saying what to
// pass instead: a checkpoint's directory, or the checkpoint itself with
// -checkpoint. A missing path is left to runlog.ReadLogs to report.
func CheckRunPath(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if info.IsDir() {
		if _, err := os.Lstat(filepath.Join(path, runlog.MetricsFile)); errors.Is(err, os.ErrNotExist) {
			return errors.Errorf("-run %s: holds no %s, so no run train wrote; -run takes a run directory (-checkpoint %s shows a model there)", path, runlog.MetricsFile, path)
		}
		return nil
	}
	if strings.HasSuffix(path, ".safetensors") {
		return errors.Errorf("-run %s: is a checkpoint file; -run takes its run directory (-run %s), and -checkpoint %s shows the model", path, filepath.Dir(path), path)
	}
	return errors.Errorf("-run %s: is a file; -run takes a run directory written by train (one holding %s)", path, runlog.MetricsFile)
}
