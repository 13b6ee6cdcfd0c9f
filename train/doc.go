// Package train turns a run config into a trained model: strict YAML loading
// and validation (Config, LoadConfig), the Adam optimizer and learning-rate
// schedule, the training loop (on model's lean machine) with evaluation,
// metrics and checkpoints, and exact resume (Run).
//
// Conventions:
//   - A run is fully described by a Config: seed, task (package data), model
//     (package model) and the train section. LoadConfig decodes a YAML file
//     over DefaultConfig, so an omitted key keeps its default; an unknown or
//     repeated key, a value of the wrong type, or a setting out of range is an
//     error before anything is built. Each error is one line that names the
//     file (with line:column when a YAML node is at fault) or the -set
//     override, the dotted key, the value and what is allowed.
//   - -set key=value overrides are applied after the file, in order. The value
//     is parsed as YAML and assigned exactly as if the file held it, so a
//     -set obeys the same rules and gives the same messages; a whole section
//     can be set at once (-set 'model={heads: 8, d_model: 64}').
//   - The task fixes the model's vocabulary and context: model.vocab and
//     model.context are never read from YAML; Resolve fills them, and d_ff
//     (4·d_model when the blocks have an MLP and it is unset, 0 when they have
//     none). A resolved Config's YAML() reloads to an equal Config, and its
//     JSON is the "config" a checkpoint carries (ParseConfigJSON reads it).
//   - Validate also refuses a run whose estimated memory (EstimateBytes)
//     exceeds MaxMemory, naming the estimate.
//   - Randomness comes only from Config.Seed, through streams derived from it
//     rather than carried along: the batch of step s from data.StepRNG(seed,
//     s), the held-out set from data.EvalSet, dropout from DropoutStream, and
//     the initial weights from model.New. A resumed run therefore needs only
//     the weights, the optimizer state and the step.
//   - Every evaluation also scores each head's roles (package heads) on the
//     first RolesSamples rows of the held-out set and appends them to
//     roles.jsonl (runlog.RolesRecord); resume cuts it back to the
//     checkpoint's step as it does metrics.jsonl.
package train
