// Package runlog reads what a training run logs in its directory, for any
// command that shows a run: the metrics (metrics.jsonl) and the head roles
// through training (roles.jsonl). Package train writes both files; this
// package owns the roles record and reads without importing train.
//
// Conventions:
//   - Both files hold one JSON object per line, each with a "step" (a line
//     without one is an error naming the file and line); a torn last line
//     (no newline, from a run killed or still writing) is ignored. A file
//     larger than MaxFileBytes, or not a regular file, is refused rather
//     than read. Read reads both (roles.jsonl may be missing), ReadMetrics
//     only metrics.jsonl.
//   - metrics.jsonl: training lines have "loss", evaluation lines
//     "eval_loss", "token_acc" and "seq_acc" (see package train).
//   - roles.jsonl: one RolesRecord per evaluation: the step and, for every
//     head as [layer][head], the score in [0, 1] of each pattern of package
//     heads, pooled over the same fixed held-out sample at every evaluation.
//   - A head's history follows its strongest role: the pattern with the
//     highest score at the last evaluation. It formed at the first
//     evaluation where that score is above FormedAt (0.5).
package runlog
