package train

import (
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// The steps of runner.loop, in its order: feeding a step, then the periodic
// jobs, each behind the condition that says when it falls due.

// startLoop starts this call's clock and its first tokens_per_s interval,
// and makes the batch buffer every step is fed through.
func (r *runner) startLoop() *Result {
	r.batch = data.NewBatch(r.cfg.Train.BatchSize, r.task.SeqLen())
	r.began = r.clock()
	r.lastLog, r.lastLogStep = r.began, r.start
	return &Result{Dir: r.dir, FirstStep: r.start + 1, Step: r.start, Steps: r.cfg.Train.Steps, ProbesOff: !r.cfg.RunsProbes()}
}

// feed draws step s's batch (data.StepRNG) and dropout masks
// (DropoutStream) and feeds them to the training graph.
func (r *runner) feed(s int) error {
	if err := data.Fill(r.task, r.batch, data.StepRNG(r.cfg.Seed, s)); err != nil {
		return err
	}
	if err := r.graph.Feed(r.batch.Tokens, r.batch.Targets, r.batch.Mask); err != nil {
		return errors.Wrapf(err, "step %d", s)
	}
	dropout := rand.New(rand.NewPCG(r.cfg.Seed, DropoutStream^uint64(s)))
	return errors.Wrapf(r.graph.drawDropout(r.cfg.Model.Dropout, dropout), "step %d", s)
}

// tokensPerStep is how many positions a step feeds (batch × sequence length).
func (r *runner) tokensPerStep() int {
	return r.cfg.Train.BatchSize * r.task.SeqLen()
}

// logsAt says whether step s writes a training line: every
// train.log_every steps and at the last step, unless log_every is 0.
func (r *runner) logsAt(s int) bool {
	t := r.cfg.Train
	return t.LogEvery > 0 && (s%t.LogEvery == 0 || s == t.Steps)
}

// logTraining writes the training line of step s to metrics.jsonl.
func (r *runner) logTraining(s int, loss, norm float64) (*runlog.TrainRecord, error) {
	now := r.clock()
	tokens := (s - r.lastLogStep) * r.tokensPerStep()
	rec := &runlog.TrainRecord{Step: s, Loss: loss, LR: r.sched.At(s), GradNorm: norm, TokensPerS: throughput(tokens, now.Sub(r.lastLog))}
	r.lastLog, r.lastLogStep = now, s
	if err := r.metrics.Write(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// throughput is tokens over interval, per second, for tokens_per_s: a
// diagnostic, always finite, since the log's check of non-finite values
// stops the run and a diagnostic must not. An interval the clock did not
// measure (a coarse clock over fast steps) gives 0, not +Inf.
func throughput(tokens int, interval time.Duration) float64 {
	if interval <= 0 {
		return 0
	}
	return float64(tokens) / interval.Seconds()
}

// evaluatesAt says whether step s evaluates (and probes): every
// train.eval_every steps and at the last step, unless evaluation is off.
func (r *runner) evaluatesAt(s int) bool {
	return r.eval != nil && (s%r.cfg.Train.EvalEvery == 0 || s == r.cfg.Train.Steps)
}

// evaluate scores the held-out set at step s and writes its line.
func (r *runner) evaluate(s int, res *Result) (*runlog.EvalRecord, error) {
	rec, err := r.runEval(r.eval, s, res)
	if err != nil {
		return nil, errors.Wrapf(err, "step %d: evaluation", s)
	}
	res.LastEval = &rec
	if err := r.metrics.Write(rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// evaluateAtLengths scores the held-out set of each train.eval_lengths
// entry at step s, in the config's order, and writes their lines.
func (r *runner) evaluateAtLengths(s int, res *Result) ([]runlog.EvalRecord, error) {
	var recs []runlog.EvalRecord
	for _, at := range r.atLength {
		rec, err := r.runEval(at, s, res)
		if err != nil {
			return nil, errors.Wrapf(err, "step %d: evaluation at length %d", s, at.length)
		}
		if err := r.metrics.Write(rec); err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	res.LastAtLength = recs
	return recs, nil
}

// runEval runs ev at step s, its time counted in res.EvalTime.
func (r *runner) runEval(ev *evaluator, s int, res *Result) (runlog.EvalRecord, error) {
	defer r.addTime(&res.EvalTime, r.clock())
	return ev.run(s)
}

// probe measures the model with every probe at step s (head roles, circuit
// metrics) and writes each one's line to its log.
func (r *runner) probe(s int, res *Result) error {
	if len(r.probes) == 0 {
		return nil
	}
	defer r.addTime(&res.RolesTime, r.clock())
	for i, p := range r.probes {
		line, err := p.Measure(s)
		if err != nil {
			return errors.Wrapf(err, "step %d: %s", s, p.File())
		}
		if err := r.probeLogs[i].Write(line); err != nil {
			return err
		}
	}
	return nil
}

// improves says whether the evaluation rec beats the run's best so far.
func (r *runner) improves(rec runlog.EvalRecord) bool {
	return rec.EvalLoss < r.state.BestLoss
}

// saveBest records the evaluation rec of step s as the run's best and,
// unless step s also saves a checkpoint (which then gives its bytes the
// name best.safetensors: r.checkpoint), saves the weights as
// best.safetensors.
func (r *runner) saveBest(s int, rec runlog.EvalRecord, res *Result) error {
	r.state.BestLoss, r.state.BestStep = rec.EvalLoss, s
	if r.checkpointsAt(s) {
		r.bestPending = true
		return nil
	}
	defer r.addTime(&res.SaveTime, r.clock())
	return checkpoint.Save(filepath.Join(r.dir, rundir.BestFile), r.model, r.cfg, s)
}

// checkpointsAt says whether step s saves a checkpoint: every
// train.checkpoint_every steps (never when it is 0) and always at the last
// step.
func (r *runner) checkpointsAt(s int) bool {
	t := r.cfg.Train
	return (t.CheckpointEvery > 0 && s%t.CheckpointEvery == 0) || s == t.Steps
}

// checkpoint saves the checkpoint of step s: it writes the weights beside
// checkpoint.safetensors (checkpoint.Stage) and the optimizer state beside
// its place, both at once (each file is bound by SHA-256 on one core or by
// the disk, so the two overlap), links the weights as best.safetensors when
// step s is the best so far (one write, two names), puts the state and then
// the checkpoint in place and drops older states: at every moment the
// directory holds a checkpoint and the state of that checkpoint's step, and
// best.safetensors is in place before the state that records it. Its time
// is counted in res.SaveTime.
func (r *runner) checkpoint(s int, res *Result) error {
	defer r.addTime(&res.SaveTime, r.clock())
	var state *safefile.Staged
	var stateErr error
	stated := make(chan struct{})
	go func() {
		defer close(stated)
		state, stateErr = stageState(r.dir, s, r.state, r.model)
	}()
	staged, err := checkpoint.Stage(filepath.Join(r.dir, rundir.CheckpointFile), r.model, r.cfg, s)
	<-stated
	if err == nil {
		err = stateErr
	}
	if err == nil {
		err = r.linkBest(s, staged)
	}
	if err == nil {
		err = state.Commit()
	}
	if err != nil {
		for _, f := range []*safefile.Staged{staged, state} {
			if f != nil {
				f.Discard()
			}
		}
		return err
	}
	if err := staged.Commit(); err != nil {
		return err
	}
	r.saved = s
	return removeStates(r.dir, func(step int) bool { return step < s })
}

// linkBest names the staged checkpoint of step s best.safetensors when
// saveBest left the best of this step to it. A file system without hard
// links gets a second write instead.
func (r *runner) linkBest(s int, staged *safefile.Staged) error {
	if !r.bestPending {
		return nil
	}
	best := filepath.Join(r.dir, rundir.BestFile)
	if err := staged.LinkAs(best); err != nil {
		if err := checkpoint.Save(best, r.model, r.cfg, s); err != nil {
			return err
		}
	}
	r.bestPending = false
	return nil
}

// unsavedAfterInterrupt says whether an interrupted loop has completed
// steps after the checkpoint on disk, which it saves before returning.
func (r *runner) unsavedAfterInterrupt(res *Result) bool {
	return res.Interrupted && res.Step > r.saved
}

// report gives the observer, if any, the event of a completed step.
func (r *runner) report(ev Event) {
	if r.observer != nil {
		ev.Elapsed = r.clock().Sub(r.began)
		r.observer(ev)
	}
}

// endLoop completes res with this call's time and the run's best evaluation.
func (r *runner) endLoop(res *Result) *Result {
	res.Elapsed = r.clock().Sub(r.began)
	res.BestLoss, res.BestStep = r.state.BestLoss, r.state.BestStep
	return res
}

// addTime adds the time since start to *total (deferred with the start).
func (r *runner) addTime(total *time.Duration, start time.Time) {
	*total += r.clock().Sub(start)
}
