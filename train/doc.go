// Package train turns a run config (rundir.Config) into a trained model: the
// Adam optimizer and learning-rate schedule, the training loop (on model's lean machine) with evaluation,
// metrics and checkpoints, and exact resume (Run).
//
// Conventions:
//   - Randomness comes only from rundir.Config.Seed, through streams derived from it
//     rather than carried along: the batch of step s from data.StepRNG(seed,
//     s), the held-out set from data.EvalSet, dropout from DropoutStream, and
//     the initial weights from model.New. A resumed run therefore needs only
//     the weights, the optimizer state and the step.
//   - Every evaluation also scores each head's roles (package heads) on the
//     first RolesSamples rows of the held-out set and appends them to
//     roles.jsonl (rundir.RolesRecord); resume cuts it back to the
//     checkpoint's step as it does metrics.jsonl.
package train
