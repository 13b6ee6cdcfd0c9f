// Package checkpoint owns the files a run saves to be read back: the
// checkpoint (a model with its run config and step: Save, Load, Peek) and
// the optimizer state beside it (OptimizerState); and what a resume reads
// of them: SavedConfig, the config of the run, which pairs its checkpoint
// with its config.yaml, and CheckResumeConfig, what a resume may change.
//
// Conventions:
//   - A checkpoint is safetensors: the weights by model.Tensors (PyTorch's
//     names and layouts) and, as metadata, the resolved run config as JSON
//     ("config", package rundir's Config), the step and the format (Format).
//     Save writes it atomically (safefile.WriteFileAtomicAt), sealed in the
//     same pass (safetensors.WriteSealed): the SHA-256 of its tensor data is
//     in the metadata (safetensors.DigestKey), and Load compares it
//     (Checkpoint.Sealed; a file written before checkpoints carried one
//     loads unsealed). Stage writes it beside its path without putting it in
//     place, so that a caller can give its bytes a second name
//     (safefile.Staged.LinkAs: best.safetensors) before committing it.
//     Neither holds a copy of the weights or of the moments: both stream
//     them a chunk at a time (model.TensorStreams).
//   - Load checks the header before any tensor data is read: the file size
//     (at most MaxLen), the format, the step, the run config (bounded in
//     size and nesting, every key known and none twice, then
//     rundir.Config.ValidateModel) and every tensor's name, dtype and shape
//     against the model it describes; each value is then checked finite.
//     Every refusal is one line naming the file and the problem. Peek makes
//     the same checks of the header and reads no tensor.
//   - OptimizerState is rundir.StateFile(step): Adam's moments as F64 or
//     F32 tensors (train.moments) and the steps, the best evaluation and the
//     digest of the checkpoint's weights as metadata bound by their own
//     digest. Its Stage writes it beside its place for the caller to commit.
//     ReadOptimizerState refuses what a run cannot have written, moments of
//     another dtype than the run's and a state of other weights, and reads
//     the moments once, straight into the tensors it returns.
//   - SavedConfig takes a run's config from its checkpoint, train.steps
//     from config.yaml when an extended run raised it, and refuses a
//     checkpoint whose config differs otherwise (one copied in from another
//     run). A resume may only raise train.steps (CheckResumeConfig).
package checkpoint
