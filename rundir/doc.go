// Package rundir owns the run config and the run directory: the config
// (Config, read from YAML with -set overrides and validated in one place,
// with the record of a fine-tuning run's pretrained model), the layout of a
// run directory and the rules that keep one safe: which file names belong
// to a run, the lock that makes one process at a time its writer, and the
// checks a directory must pass to hold a new run. The files a run writes
// have packages of their own: runlog (the logs), checkpoint (the
// checkpoints and the optimizer state) and initfrom (a fine-tuning run's
// record of its pretrained model, and its tokenizer copies).
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
//     JSON is the "config" a checkpoint carries (package checkpoint reads it
//     back, and applies ValidateModel, the checks a reader of a model needs).
//   - Validate also refuses a run whose estimated memory (EstimateBytes)
//     exceeds MaxMemory, naming the estimate. A fine-tuning run's graphs are
//     held to MaxMemory, and its whole estimate, the pretrained model's
//     weights, gradients and moments included, to the memory the machine
//     has available (model.MemAvailableHere).
//   - init_from names a pretrained model to fine-tune (Config.FineTunes).
//     LoadConfigFrom decodes such a config over the model the command's
//     OpenPretrained returns, after checking the task and the train section
//     without it: a model key that disagrees is refused (model.dropout and
//     model.attention may differ), and the record of the model (Config.Init:
//     initfrom.Record, every file read with its size and SHA-256, the
//     tokenizer files by name, the vocabulary and context) is kept in
//     config.yaml and every checkpoint. The task is text through the model's tokenizer
//     (task.chars stays empty), windows of task.length tokens within a
//     learned position table; the memory estimate counts the activations at
//     task.length and the weights whole. LoadConfig and ParseConfig, which
//     open nothing, refuse init_from.
//   - A run directory holds ConfigFile, the logs (runlog.MetricsFile,
//     runlog.RolesFile, runlog.CircuitsFile), CheckpointFile, BestFile,
//     state-<step>.safetensors (StateFile), LockFile, a fine-tuning run's
//     copies of its tokenizer files (initfrom.CopyName: init-tokenizer.json, ...),
//     and the temporaries of interrupted atomic writes (".<name>.tmp-<digits>").
//     Adding a file to a run means adding its name here (IsRunFile).
//   - A new run goes only into a directory that is missing, empty or holds
//     nothing but a run's files (CheckOnlyRunFiles): a stale lock or the
//     temporaries of an interrupted write count as empty, anything else (a
//     user's data, /) is refused with a ForeignError naming a few entries.
//   - Lock takes an exclusive flock on LockFile for the life of the writing
//     process. The kernel drops it when the process dies, so a lock left by a
//     killed run never blocks a resume; the file keeps the holder's pid only
//     so that the refusal can name it, and Release removes it.
//   - An output of a command never replaces or adds a run's file:
//     RefuseRunFile refuses a run file's name in a directory holding a run,
//     or one that exists. The commands pass it to safefile.WriteOutput (the
//     output rule: never an input, never anything but a regular file) beside
//     their inputs.
package rundir
