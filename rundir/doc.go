// Package rundir owns the files of a training run: the run config (Config,
// read from YAML with -set overrides, or from a checkpoint's JSON, and
// validated in one place), the layout of a run directory and the rules
// that keep one safe: which file names belong to a run, the lock that makes
// one process at a time its writer, and the one function every command uses
// to write an output file (a PNG, a DOT graph, an HTML page) so that it can
// never replace its input or a run's file.
//
// Conventions:
//   - A run directory holds ConfigFile, MetricsFile, RolesFile, CheckpointFile,
//     BestFile, state-<step>.safetensors (StateFile), LockFile, and the
//     temporaries of interrupted atomic writes (".<name>.tmp-<digits>").
//     Adding a file to a run means adding its name here (IsRunFile).
//   - Lock takes an exclusive flock on LockFile for the life of the writing
//     process. The kernel drops it when the process dies, so a lock left by a
//     killed run never blocks a resume; the file keeps the holder's pid only
//     so that the refusal can name it, and Release removes it.
//   - WriteOutput refuses a path that is one of the command's inputs, a run
//     file in a directory holding a run, or an existing path that is not a
//     regular file (a symlink, a pipe, a device), and writes atomically
//     beside the target.
package rundir
