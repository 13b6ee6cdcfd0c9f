// Package train turns a run config (rundir.Config) into a trained model: the
// Adam optimizer and learning-rate schedule, the training loop with
// evaluation, metrics and checkpoints, and exact resume (Run).
//
// Conventions:
//   - A training step runs its batch as Replicas: replicaCount graphs of its
//     rows, each on a one-shot machine (model.Graph.NewOneShotMachine:
//     an activation lives until the backward pass last reads it), run side
//     by side, one per core, their losses and gradients combined into the
//     whole batch's, written over the first part's. The evaluation graphs
//     run on one-shot machines too. Memory (model.Config.TrainMemory) is
//     the weights, the parts' gradients, the Adam moments and one step's
//     largest working set.
//     The count is fixed, so a config trains to the same numbers on any
//     machine. cmd/bench times the same step through BuildReplicas.
//   - The loop (runner.loop) reads as nanoGPT's train.py: it feeds a step,
//     takes it, then runs each periodic job that falls due (the training
//     line, the evaluations, the probes, best.safetensors, the checkpoint)
//     as one call behind a condition named for it (logsAt, evaluatesAt,
//     improves, checkpointsAt). The jobs live in jobs.go, in the loop's
//     order, which is the order of the lines and files they write.
//   - Only the loss, the gradients, the weight updates and the evaluations
//     stop a run when they are not finite. A diagnostic never does:
//     tokens_per_s, the one value read from the wall clock, is 0 over an
//     interval the clock did not measure (throughput). The clock is
//     runner.clock, which a test stops.
//   - Randomness comes only from rundir.Config.Seed, through streams derived
//     from it rather than carried along: the batch of step s from data.StepRNG(seed,
//     s), the held-out set from data.EvalSet, dropout from DropoutStream, and
//     the initial weights from model.New. A resumed run therefore needs only
//     the weights, the optimizer state and the step.
//   - A run with init_from (rundir.Config.FineTunes) starts from the
//     pretrained model's weights (OpenPretrained, through package open)
//     instead of seeded ones, on the text read through its tokenizer
//     (data.NewTokenText). A new run copies the tokenizer files into its
//     directory before config.yaml; a resume reads them there, so a run with
//     a checkpoint needs nothing of the pretrained directory. A run killed
//     before its first checkpoint opens the pretrained model again, after
//     checking every file the run recorded (initfrom.Record.CheckFiles).
//   - Every evaluation also runs the run's probes (Options.Probes, an
//     interface train owns: cmd/train wires package analysis's head roles
//     and circuit metrics, so training imports no analysis) and appends each
//     one's line to its log (roles.jsonl, circuits.jsonl); resume cuts the
//     logs back to the checkpoint's step as it does metrics.jsonl. A
//     fine-tuning run does not probe unless train.probes says on
//     (rundir.Config.RunsProbes; Result.ProbesOff).
//   - A checkpoint and its optimizer state are staged at once, on two
//     goroutines (checkpoint.Stage, checkpoint.OptimizerState.Stage). A step
//     that evaluates best and saves a checkpoint writes the weights once:
//     the staged checkpoint is linked as best.safetensors, then the state is
//     put in place, then the checkpoint.
//   - Adam's moments are float64, or float32 (train.moments; by default
//     with init_from, rundir.Config.MomentBytes); the update is computed in
//     float64 either way (kernels.Adam).
package train
