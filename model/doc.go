// Package model is the small causal language model built from package layers:
// token + position embedding, a stack of blocks, an optional final LayerNorm
// and a linear LM head.
//
// Conventions:
//   - Weights are plain tensors owned by a Model, named and laid out exactly as
//     PyTorch's nn.Linear / nn.Embedding would hold them (Linear weight is
//     (out_features, in_features)); see ParamSpecs for the full list. The same
//     tensors can be bound into any number of graphs (training, evaluation,
//     inspection) by Build.
//   - Training runs a batch as Replicas: ReplicaCount graphs of its rows run
//     side by side, one per core, their losses and gradients combined into
//     the whole batch's. The count is fixed, so a config trains to the same
//     numbers on any machine.
//   - Initial weights come only from the seed passed to New: same seed, same
//     weights, bit for bit, on every machine.
//   - Token ids, targets and loss masks are flat (B*T) vectors in row-major
//     (batch, position) order.
//   - Checkpoints are safetensors files whose __metadata__ carries the run
//     config as JSON (key "config", whose "model" member is a Config), the step
//     and the format version.
package model
