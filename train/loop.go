package train

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// modelDtype is the element type of the models Run trains: float32, as
// PyTorch trains by default (float64 doubles the time for no gain here).
var modelDtype = tensor.Float32

// DropoutStream is the second PCG word of the dropout masks of a step, XORed
// with the step number: the masks of step s come from
// rand.NewPCG(seed, DropoutStream^s), a stream distinct from the batch of
// step s (data.StepRNG) and from the evaluation set (data.EvalStream).
const DropoutStream uint64 = 0x6472_6f70_0000_0000 // "drop" in the high bytes

// ErrRunExists is returned (wrapped) when a fresh run is pointed at a
// directory that already holds one.
var ErrRunExists = errors.New("already holds a run")

// Event is what Run reports to its Observer after every step.
type Event struct {
	Step, Steps int
	Loss        float64             // this step's training loss
	Tokens      int                 // positions fed per step (batch × sequence length)
	Elapsed     time.Duration       // wall time since this call's first step began
	Train       *runlog.TrainRecord // the training line, on steps that log one
	Eval        *runlog.EvalRecord  // the evaluation, on steps that evaluate
	// AtLength are the evaluations at train.eval_lengths, in the config's
	// order, on steps that evaluate.
	AtLength []runlog.EvalRecord
}

// Observer receives an Event after every step (for progress display). It runs
// on the training goroutine, so it should be quick.
type Observer func(Event)

// Options says where a run lives and who watches it.
type Options struct {
	Dir string // run directory, created if missing
	// Resume continues the run in Dir from its latest checkpoint (or from the
	// start if it was stopped before its first one). Without Resume, Run
	// refuses a Dir that already holds a run (ErrRunExists) or holds anything
	// but a run's files (*rundir.ForeignError), before writing anything.
	Resume   bool
	Observer Observer // may be nil
	// Data, on resume, is where the text task's file is now when it moved
	// since the run recorded it; its content must still be what the run
	// recorded. "" reads it where the run recorded it.
	Data string
	// Notices receives notes for the user, one line each (stderr); nil
	// drops them.
	Notices io.Writer
	// Probes makes what the run records at every evaluation besides its
	// metrics (cmd/train wires the head roles and circuit metrics of
	// package analysis); nil records nothing more.
	Probes Probes
	// Pretrained is the model a new fine-tuning run starts from when the
	// caller opened it for the config (OpenPretrained; its record must be
	// the config's init, else it is opened again); nil opens it.
	Pretrained *Pretrained
}

// Result summarises a finished or interrupted Run.
type Result struct {
	Dir         string
	FirstStep   int // first step this call ran: 1, or the checkpoint's step + 1 when resuming
	Step        int // last completed step (== Steps unless Interrupted)
	Steps       int
	Interrupted bool          // ctx was cancelled; a checkpoint of Step was saved
	Elapsed     time.Duration // wall time of this call's steps
	// EvalTime and SaveTime are the parts of Elapsed spent evaluating and
	// writing files (checkpoints, optimizer states, best.safetensors).
	EvalTime, SaveTime time.Duration
	RolesTime          time.Duration       // the probes at each evaluation (head roles, circuit metrics)
	ProbesOff          bool                // train.probes turned them off (by default with init_from)
	LastEval           *runlog.EvalRecord  // the last evaluation of this call, nil if none
	LastAtLength       []runlog.EvalRecord // the last evaluations at train.eval_lengths
	BestLoss           float64             // lowest eval_loss of the run so far (+Inf if none)
	BestStep           int
}

// Run trains cfg in opts.Dir until cfg.Train.Steps, or until ctx is cancelled,
// in which case it saves a checkpoint of the last completed step and returns
// with Interrupted set. A non-finite loss, gradient or weight stops the run
// with an error naming the step; nothing is saved after the last good step.
//
// The run directory holds ConfigFile, MetricsFile, CheckpointFile, BestFile
// and state-<step>.safetensors, the optimizer state of the checkpoint's step.
// Every file is replaced atomically, and in an order (metrics, best, state,
// checkpoint, then removal of older states) that leaves a resumable directory
// whenever the process is killed; a resumed run ends bit-identical to an
// uninterrupted one.
func Run(ctx context.Context, cfg rundir.Config, opts Options) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r, err := prepare(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	defer r.close()
	return r.loop(ctx)
}

// runner is one Run in progress.
type runner struct {
	cfg       rundir.Config
	notices   io.Writer
	newProbes Probes
	dir       string
	observer  Observer
	task      data.Task
	// pretrained is the model a new fine-tuning run starts from, nil for
	// any other run.
	pretrained *Pretrained
	model      *model.Model
	graph      *Replicas    // the training step, its batch split over the cores
	eval       *evaluator   // nil when evaluation is off
	atLength   []*evaluator // one per train.eval_lengths entry
	// extendedTo is the train.steps a resume wrote into config.yaml when it
	// extended the run (0 when it did not): an interruption before the first
	// step says so.
	extendedTo int
	probes     []Probe       // none when evaluation is off
	probeLogs  []*runlog.Log // probes[i] writes probeLogs[i]
	state      runState
	sched      LRSchedule
	metrics    *runlog.Log
	lock       *rundir.Lock // held from the first look at the directory to the end
	start      int          // last completed step before this call
	saved      int          // step of the checkpoint on disk
	// bestPending says the step being trained evaluated best and saves a
	// checkpoint, which gives its bytes the name best.safetensors.
	bestPending bool
	batch       *data.Batch // the fed batch of the step being trained
	// clock is the wall clock of the timings (Result, Event.Elapsed) and of
	// tokens_per_s; a test stops it.
	clock func() time.Time
	began time.Time // when this call's first step began
	// lastLog and lastLogStep are the time and step of the previous training
	// line (of this call's start before the first), the interval
	// tokens_per_s is measured over.
	lastLog     time.Time
	lastLogStep int
}

// ErrInterruptedEarly is returned by Run when its context is cancelled
// before the first step: nothing of the run was trained or saved (a fresh
// run's directory is not created).
var ErrInterruptedEarly = errors.New("interrupted before the first step; nothing was trained")

func prepare(ctx context.Context, cfg rundir.Config, opts Options) (*runner, error) {
	if opts.Dir == "" {
		return nil, errors.New("no run directory given")
	}
	if opts.Data != "" && !opts.Resume {
		return nil, errors.New("a new run reads task.path; a moved text file is named (with -data) only on resume")
	}
	taskCfg, err := data.Relocate(cfg.Task, opts.Data)
	if err != nil {
		return nil, err
	}
	var task data.Task
	var pre *Pretrained
	if cfg.FineTunes() {
		task, pre, err = fineTuneTask(cfg, taskCfg, opts)
	} else {
		task, err = data.New(taskCfg)
	}
	if err != nil {
		return nil, err
	}
	if data.IsText(task) && opts.Notices != nil {
		fmt.Fprintf(opts.Notices, "reading windows of %s\n", msg.Clean(data.TextLocation(taskCfg)))
	}
	if cfg.FineTunes() && opts.Notices != nil {
		fmt.Fprintf(opts.Notices, "memory: an estimated %s\n", cfg.Memory())
	}
	r := &runner{cfg: cfg, dir: opts.Dir, observer: opts.Observer, notices: opts.Notices, newProbes: opts.Probes, task: task,
		pretrained: pre, state: runState{BestLoss: math.Inf(1)}, clock: time.Now}
	t := cfg.Train
	r.sched = LRSchedule{Peak: t.LR, Min: t.MinLR, Warmup: t.WarmupSteps, Steps: t.Steps, Cosine: t.Schedule == "cosine"}
	if opts.Resume {
		if r.lock, err = lockRun(r.dir); err != nil {
			return nil, err
		}
		if err = r.resume(); err != nil {
			r.close()
		}
	} else {
		err = r.fresh()
	}
	if err != nil {
		return nil, err
	}
	if err := r.build(ctx); err != nil {
		r.close()
		if ctx.Err() != nil && r.extendedTo > 0 {
			return nil, errors.Wrapf(ErrInterruptedEarly, "%s records the extension to %d steps (-resume continues it)", rundir.ConfigFile, r.extendedTo)
		}
		if ctx.Err() != nil {
			return nil, ErrInterruptedEarly
		}
		return nil, err
	}
	// A fresh run's directory is created only once everything else has
	// worked, so a failure above leaves no half-made run behind.
	if !opts.Resume {
		if err := r.createDir(); err != nil {
			r.close()
			return nil, err
		}
	}
	if r.metrics, err = runlog.OpenLog(filepath.Join(r.dir, runlog.MetricsFile)); err != nil {
		r.close()
		return nil, err
	}
	for _, p := range r.probes {
		l, err := runlog.OpenLog(filepath.Join(r.dir, p.File()))
		if err != nil {
			r.close()
			return nil, err
		}
		r.probeLogs = append(r.probeLogs, l)
	}
	return r, nil
}

// build makes the training graph and machine, and the evaluator; a
// cancelled ctx stops it while it draws the held-out set.
func (r *runner) build(ctx context.Context) error {
	t := r.cfg.Train
	var err error
	if r.graph, err = BuildReplicas(r.model, t.BatchSize, r.task.SeqLen()); err != nil {
		return err
	}
	if t.EvalEvery > 0 {
		if r.eval, err = newEvaluator(ctx, r.model, r.task, t.EvalSize, model.EvalBatch(t.EvalSize, r.task.SeqLen()), r.cfg.Seed); err != nil {
			return err
		}
		r.eval.write = t.EvalGenerate
		if r.newProbes != nil && r.cfg.RunsProbes() {
			if r.probes, err = r.newProbes(r.model, r.task, r.cfg); err != nil {
				return err
			}
		}
		tasks, err := r.cfg.EvalLengthTasks()
		if err != nil {
			return err
		}
		for i, task := range tasks {
			ev, err := newEvaluator(ctx, r.model, task, t.EvalSize, model.EvalBatch(t.EvalSize, task.SeqLen()), r.cfg.Seed)
			if err != nil {
				return errors.Wrapf(err, "evaluation at length %d", t.EvalLengths[i])
			}
			ev.length, ev.write = t.EvalLengths[i], t.EvalGenerate
			r.atLength = append(r.atLength, ev)
		}
	}
	return err
}

// fresh starts a new run from the seed, refusing a directory that holds one
// or holds anything but a run's files (a user's data, /).
func (r *runner) fresh() error {
	if err := rundir.CheckDir(r.dir); err != nil {
		return err
	}
	if held, err := rundir.HoldsRun(r.dir); err != nil {
		return err
	} else if held {
		// A run being written says so, rather than that it exists.
		if lock, err := rundir.Acquire(r.dir); errors.Is(err, rundir.ErrInUse) {
			return err
		} else if err == nil {
			_ = lock.Release() // held for a moment only to ask; nothing was written
		}
		return errors.Wrapf(ErrRunExists, "%s", r.dir)
	}
	if err := rundir.CheckOnlyRunFiles(r.dir); err != nil {
		return err
	}
	var err error
	if r.model, err = r.initialModel(); err != nil {
		return err
	}
	r.state.Adam = r.newAdam()
	return nil
}

// createDir locks a fresh run's directory and writes its config and empty
// metrics log. The checks that neither a run nor anything else is there are
// repeated under the lock: a run started at the same moment, or a user, may
// have written files since fresh.
func (r *runner) createDir() error {
	if err := rundir.CheckDir(r.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return errors.Wrap(err, "creating the run directory")
	}
	var err error
	if r.lock, err = lockRun(r.dir); err != nil {
		return err
	}
	if held, err := rundir.HoldsRun(r.dir); err != nil {
		return err
	} else if held {
		return errors.Wrapf(ErrRunExists, "%s", r.dir)
	}
	if err := rundir.CheckOnlyRunFiles(r.dir); err != nil {
		return err
	}
	if r.cfg.FineTunes() {
		// Before config.yaml: a run killed in between is no run yet, and a
		// run that has a config has its tokenizer.
		if err := r.cfg.Init.CopyTokenizer(r.dir); err != nil {
			return err
		}
	}
	yml, err := r.cfg.YAML()
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(r.dir, rundir.ConfigFile), yml); err != nil {
		return err
	}
	return writeFile(filepath.Join(r.dir, runlog.MetricsFile), nil)
}

// initialModel is the model at step 0: the pretrained model of a
// fine-tuning run, else seeded weights.
func (r *runner) initialModel() (*model.Model, error) {
	if r.cfg.FineTunes() {
		if r.pretrained == nil {
			var err error
			if r.pretrained, err = reopenPretrained(r.cfg, r.notices); err != nil {
				return nil, err
			}
		}
		return pretrainedModel(r.pretrained, r.cfg)
	}
	return model.New(r.cfg.Model, modelDtype, r.cfg.Seed)
}

func (r *runner) newAdam() *Adam {
	t := r.cfg.Train
	return NewAdam(r.model.Params, r.moments(), t.Beta1, t.Beta2, t.Eps, t.WeightDecay)
}

// moments is the dtype of the run's Adam moments (rundir.Config.MomentBytes).
func (r *runner) moments() tensor.Dtype {
	if r.cfg.MomentBytes() == 4 {
		return tensor.Float32
	}
	return tensor.Float64
}

// resumedMoments is the dtype of the moments a resume reads: train.moments'
// when the config gives it, else the state file's, so that a fine-tuning run
// saved while its default was float64 resumes with its float64 moments.
func (r *runner) resumedMoments() tensor.Dtype {
	if r.cfg.Train.Moments == "" {
		return tensor.Dtype{}
	}
	return r.moments()
}

func (r *runner) close() {
	if r.graph != nil {
		r.graph.Close()
	}
	if r.eval != nil {
		r.eval.vm.Close()
	}
	for _, ev := range r.atLength {
		ev.vm.Close()
	}
	for _, p := range r.probes {
		p.Close()
	}
	// The logs were written line by line; a close error cannot lose any.
	for _, l := range append([]*runlog.Log{r.metrics}, r.probeLogs...) {
		if l != nil {
			_ = l.Close()
		}
	}
	if r.lock != nil {
		// Closing the lock file cannot fail in a way that keeps the lock.
		_ = r.lock.Release()
	}
}

// loop trains from the step after r.start to the run's last, as nanoGPT's
// train.py does: each step feeds its batch and updates the weights, then
// runs the periodic jobs that fall due on it, in the order their lines and
// files are written. A cancelled ctx stops it between steps, with a
// checkpoint of the last completed one.
func (r *runner) loop(ctx context.Context) (*Result, error) {
	res := r.startLoop()
	for s := r.start + 1; s <= res.Steps; s++ {
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		if err := r.feed(s); err != nil {
			return nil, err
		}
		loss, norm, err := r.step(s)
		if err != nil {
			return nil, errors.Wrapf(err, "step %d", s)
		}
		ev := Event{Step: s, Steps: res.Steps, Loss: loss, Tokens: r.tokensPerStep()}
		if r.logsAt(s) {
			if ev.Train, err = r.logTraining(s, loss, norm); err != nil {
				return nil, err
			}
		}
		if r.evaluatesAt(s) {
			if ev.Eval, err = r.evaluate(s, res); err != nil {
				return nil, err
			}
			if ev.AtLength, err = r.evaluateAtLengths(s, res); err != nil {
				return nil, err
			}
			if err := r.probe(s, res); err != nil {
				return nil, err
			}
			if r.improves(*ev.Eval) {
				if err := r.saveBest(s, *ev.Eval, res); err != nil {
					return nil, err
				}
			}
		}
		if r.checkpointsAt(s) {
			if err := r.checkpoint(s, res); err != nil {
				return nil, err
			}
		}
		res.Step = s
		r.report(ev)
	}
	if r.unsavedAfterInterrupt(res) {
		if err := r.checkpoint(res.Step, res); err != nil {
			return nil, errors.Wrap(err, "saving on interrupt")
		}
	}
	return r.endLoop(res), nil
}

// step runs forward and backward on the fed batch, clips, and updates the
// weights. It checks the loss and the gradients before touching the weights.
func (r *runner) step(s int) (loss, norm float64, err error) {
	defer r.graph.Reset()
	if err := r.graph.RunAll(); err != nil {
		return 0, 0, errors.Wrap(err, "running the training graph")
	}
	if loss, err = r.graph.LossValue(); err != nil {
		return 0, 0, err
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return 0, 0, errors.Errorf("the training loss is %v; stopping (%s)", loss, r.untouched())
	}
	grads, err := r.graph.Gradients()
	if err != nil {
		return 0, 0, err
	}
	norm, err = ClipGlobalNorm(grads, r.cfg.Train.GradClip)
	if err != nil {
		return 0, 0, err
	}
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return 0, 0, errors.Errorf("the gradient norm is %v; stopping (%s)", norm, r.untouched())
	}
	if err := r.state.Adam.Update(r.model.Params, grads, r.sched.At(s)); err != nil {
		return 0, 0, errors.Wrapf(err, "stopping (%s)", r.untouched())
	}
	return loss, norm, nil
}

// untouched says what a run stopped by a non-finite value leaves behind.
func (r *runner) untouched() string {
	if r.saved == 0 {
		return "no checkpoint was written yet"
	}
	return fmt.Sprintf("the checkpoint of step %d is untouched", r.saved)
}

// writeFile replaces path with content atomically.
func writeFile(path string, content []byte) error {
	return safefile.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(content)
		return err
	})
}
