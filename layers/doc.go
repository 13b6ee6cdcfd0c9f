// Package layers builds multi-head self-attention and the transformer parts
// around it as symbolic Gorgonia (v0.9.18) expression graphs, together with
// the custom ops they need.
//
// Conventions:
//   - Activations are flat matrices (B*T, D), rows in row-major (batch,
//     position) order; only attention scores and weights are 4-D,
//     (B, H, T, T) with rows = queries and columns = keys.
//   - A layer is a struct holding its parameter nodes, a constructor that
//     checks every size (errors name the numbers) and a Forward method that
//     adds nodes to the graph and returns them. Layers never create weights:
//     the caller creates them, usually with NewParam.
//   - Weights are in PyTorch layout: a Linear weight is (out, in) and is used
//     as y = x W^T + b; an Embedding table is (V, D).
//   - Every input, parameter and constant node gets a unique name (for
//     parameters, the checkpoint name such as "blocks.0.attn.qkv.weight"),
//     because Gorgonia merges nodes whose dtype, shape and name hash alike.
//     Constants are named inputs, never gorgonia.NewConstant.
//   - Every layer has a Path: Fused (the zero value, this package's ops
//     below) or Gorgonia (gorgonia.go: Gorgonia's own Mul, Transpose,
//     Reshape, Slice, BatchedMatMul, ByIndices and element-wise arithmetic,
//     gradients derived by gorgonia.Grad). Both compute the same function of
//     the same weights; tests hold outputs and gradients equal. The Gorgonia
//     path keeps this package's op only where Gorgonia's is wrong (the masked
//     softmax; LayerNorm avoids InverseSqrt), each upstream bug pinned in
//     upstream_test.go.
//   - Every node Forward adds is named after its layer, from the weights'
//     checkpoint names ("blocks.0.attn.qkv.weight" gives "blocks.0.attn.qkv",
//     "blocks.0.attn.scores", ...), helper nodes included (NameAs).
//   - Ops Gorgonia gets wrong are replaced by ops of this package with exact
//     gradients: MaskedSoftmax (the built-in last-axis SoftMax subtracts the
//     tensor's first element, not each row's max), CrossEntropy (LogSoftMax
//     shares that kernel), GELU, LayerNorm and Linear (one GEMM with the
//     weight read transposed in place instead of a Transpose copy per step).
//     Attention dropout is a caller-supplied mask, never gorgonia.Dropout.
//   - Ops are also replaced where Gorgonia's are slow: the attention's head
//     split and merge (one permuting copy each, not Reshape + the
//     iterator-driven Transpose), its two batched products (one GEMM per
//     (batch, head) pair over contiguous memory, pairs spread over the
//     cores, not a sliced view per pair), Embedding (a gather with a
//     scatter-add gradient, not ByIndices) and Add.
//   - Every op of this package writes its output into a buffer the node owns
//     and reuses on every run, instead of a fresh tensor (Gorgonia's
//     TapeMachine would allocate every output on every step). So a node's
//     value is only valid until the next run of its graph: copy what must
//     outlive it (model.Graph's machine does for Logits, Loss, Attention).
//   - The numerical loops (GEMM, the vector exponential, the parallel row
//     loops) are internal/kernels'; this package only builds graphs and
//     defines the ops.
//   - Kernels accept float32 and float64 and accumulate reductions in
//     float64, except where a vector kernel keeps float32 lanes (GEMM
//     accumulation, as any BLAS does, and the softmax row sum).
package layers
