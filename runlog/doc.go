// Package runlog owns the logs of a training run: metrics.jsonl,
// roles.jsonl and circuits.jsonl, their records, the one writer (Log) and
// the readers (ReadLogs, ReadMetrics), and the truncation a resumed run
// applies (TruncateLog). It imports no model and no Gorgonia: a view of a
// run's curves (render/htmlview) needs the records and nothing else.
//
// Conventions:
//   - The logs hold one JSON object per line, each with a "step", written
//     by Log (one write a line, so a killed run leaves at most a torn last
//     line) and cut back to a checkpoint's step on resume by TruncateLog,
//     within MaxMetricsBytes, MaxRolesBytes and MaxCircuitsBytes. Every key
//     is snake_case, and the names of things (roles, heads) are values,
//     never keys: metrics.jsonl holds TrainRecord and EvalRecord lines,
//     roles.jsonl RolesRecord lines, circuits.jsonl CircuitsRecord lines,
//     each head a record of its own. The readers also take the shape that
//     runs wrote before (roles as keys, heads as grids), line by line, so a
//     run written before, resumed now, reads whole.
//   - A record holding a NaN or an infinite value is never written: Log
//     refuses it, naming the step and the value.
//   - ReadLogs reads a run's logs for a command that shows a run: a torn last
//     line is skipped; a line without a step, of another shape of model than
//     the first, or going back in steps is an error naming the file and
//     line; a file larger than MaxLogBytes, or not a regular file, is
//     refused rather than read. A head's history follows its strongest role:
//     the pattern with the highest score at the last evaluation; it formed at
//     the first evaluation where that score is above FormedAt (0.5).
//   - The names of the logs (MetricsFile, RolesFile, CircuitsFile) are here;
//     package rundir counts them among a run directory's files.
package runlog
