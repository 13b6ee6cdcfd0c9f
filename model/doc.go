// Package model is the small causal language model built from package layers:
// token + position embedding, a stack of blocks, an optional final norm
// (the config's: a LayerNorm, with or without a bias, or an RMSNorm, by
// (1 + w) with norm_offset) and a linear LM head (the token embedding
// itself with tie_embeddings), with Gemma's and GPT-Neo's changes to the
// scores, the logits and the token embeddings when the config sets them
// (scores.go). A full block's norms sit before its
// sublayers, around them (sandwich) or after them (post), as
// norm_placement says (norms.go); resid_pre and resid_post are the stream
// between blocks in every placement.
//
// The package is the model: its config, weights and graphs. Checkpoints
// (the weights as safetensors tensors, Model.Tensors, with the run config
// and step in the metadata) are package checkpoint's.
// How a graph runs lives elsewhere: the lean machine NewLeanMachine returns
// is internal/engine's Machine, and the training step's split of a batch
// over the cores is train's Replicas. The KV-cache Decoder stays here
// because it assembles the same blocks as Build through Build's unexported
// builders (the embeddings, blocks, final norm and LM head); moved to
// package generate it would need half of them exported.
//
// Reference (reference.go) is the model once more as plain float64 loops,
// one token at a time with its KV cache, in the style of llama2.c's run.c:
// the definition a newcomer reads top to bottom, and the oracle the tests
// hold Build and Decoder to on every variant.
//
// Conventions:
//   - Weights are plain tensors owned by a Model, named and laid out exactly as
//     PyTorch's nn.Linear / nn.Embedding would hold them (Linear weight is
//     (out_features, in_features)); see ParamSpecs for the full list. The same
//     tensors can be bound into any number of graphs (training, evaluation,
//     inspection) by Build.
//   - A model opened for inspection may keep its large matrices in their
//     file's dtype, mapped (Param.Stored, stored.go): the fused path's
//     Linear and Embedding read them in place, bit for bit what they give
//     on the weights widened; the Gorgonia path and training need
//     WidenStored first, and Param hands analyses a widened copy. The
//     memory estimates count such weights in no float32 value
//     (Config.MappedWeights); CheckResident holds them to MemAvailable.
//   - Initial weights come only from the seed passed to New: same seed, same
//     weights, bit for bit, on every machine.
//   - Token ids, targets and loss masks are flat (B*T) vectors in row-major
//     (batch, position) order.
//   - Activations (names.go, activations.go): Config.Activations is the
//     table of every activation a graph has, TransformerLens's hook points
//     in its from_pretrained_no_processing values (nothing folded): each
//     under the lab's name (blocks.5.attn.weights, the graph's node names)
//     and TransformerLens's (blocks.5.attn.hook_pattern), with its shape
//     in the graph and TransformerLens's axes (ActivationSpec.ToTL turns a
//     value into TransformerLens's layout, batch first).
//     ResolveActivations is the one lookup: every place that takes an
//     activation's name (BuildOptions.Cache and Hooks, Graph.Activation,
//     Graph.ActivationSpec, Graph.SetHook, Graph.Hook) takes either name
//     or a glob of either (blocks.*.attn.weights), and refuses one the
//     graph has not, listing those it has. Activations a plain forward of
//     the fused path does not compute (q, k, v after rotary positions, the
//     pre-softmax scores, each head's result, norm scales) are built only
//     when named. A hook is a Go function (HookFunc) run at an activation
//     on every run, reading it and optionally replacing it for the ops
//     downstream; the mask and fill Intervention is one such function.
//     BuildOptions.Grads builds the gradient of the loss, or of a metric
//     linear in the logits (MetricWeights), with respect to activations
//     (Graph.ActivationGrad): Gorgonia's Backpropagate from the metric,
//     on both paths, for attribution patching.
//   - Model.Tensors gives the weights as safetensors tensors, by those names
//     and layouts, for package checkpoint to write (their __metadata__
//     carries the run config, its "model" member a Config).
package model
