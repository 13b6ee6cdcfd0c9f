// Package ops holds the custom Gorgonia (v0.9.18) ops the layers are built
// from, each with an exact, hand-written gradient. Package layers decides
// which op a layer writes; this package only defines them.
//
// Conventions:
//   - An op is a def (op.go): its name with every size that changes its
//     result, its signature (inputs and output rank), its output shape and
//     its kernel. One type, op, turns any def into a gorgonia.Op: arity,
//     type, shape inference, argument checks (rank, dtype, contiguity), the
//     reused output buffer, the float32/float64 dispatch (byDtype) and the
//     hash are written once there. A def with a grad method is
//     differentiable; its signature marks which inputs the gradient flows to.
//   - Sizes travel in named structs (Heads{B, T, H, D}), never positional
//     int lists, and ops read every other size from their inputs' shapes.
//   - Ops Gorgonia gets wrong are replaced by ops of this package with exact
//     gradients: MaskedSoftmax (the built-in last-axis SoftMax subtracts the
//     tensor's first element, not each row's max), CrossEntropy (LogSoftMax
//     shares that kernel), GELU, LayerNorm (with or without a bias),
//     RMSNorm (LayerNorm's op about 0: Gorgonia's InverseSqrt has a wrong
//     gradient) and Linear (one GEMM with the weight read transposed in
//     place instead of a Transpose copy per step). Erf fills a gap:
//     Gorgonia has none, and the Gorgonia path's exact GELU needs it.
//     See docs/gorgonia.md.
//   - Ops are also replaced where Gorgonia's are slow: the attention's head
//     split and merge (one permuting copy each, not Reshape + the
//     iterator-driven Transpose), its two batched products (one GEMM per
//     (batch, head) pair over contiguous memory, pairs spread over the
//     cores, not a sliced view per pair), Embedding (a gather with a
//     scatter-add gradient, not ByIndices), Add and the MLP activations
//     (GELUExact, ReLU2 and SwiGLU's silu(gate)·up: one element-wise op
//     each, not a chain of Gorgonia's nodes).
//   - A weight kept in its file's dtype (Stored: BF16 or F16, in parts,
//     usually a file's mapping) is read in place by LinearStored and
//     EmbeddingStored, forward only, with the bits Linear and Embedding
//     give on it widened. Every read of mapped memory goes through
//     ReadMapped, which turns a fault (the file truncated under the map)
//     into a one-line error instead of a SIGBUS.
//   - Two ops serve TransformerLens's activations: MaskScores (the
//     attention scores scaled, biased and masked with -Inf, as
//     hook_attn_scores holds them, built only when a graph asks for them)
//     and Hook (a caller's function at an activation, run on a copy of it
//     each run; its gradient is the identity's).
//   - Every op writes its output into a buffer the node owns and reuses on
//     every run, instead of a fresh tensor (Gorgonia's TapeMachine would
//     allocate every output on every step). So a node's value is only valid
//     until the next run of its graph: copy what must outlive it. A
//     machine that runs its graph once (engine.NewOneShotMachine) takes the
//     buffer back after the node's last reader (Release) and may hand it
//     to a later node of the same size (Prealloc).
//   - The numerical loops (GEMM, the vector exponential, the parallel row
//     loops) are internal/kernels'. Kernels accept float32 and float64 and
//     accumulate reductions in float64, except where a vector kernel keeps
//     float32 lanes (GEMM accumulation, as any BLAS does, and the softmax
//     row sum).
package ops
