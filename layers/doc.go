// Package layers builds multi-head self-attention and the transformer parts
// around it as symbolic Gorgonia (v0.9.18) expression graphs: Linear,
// Embedding, LayerNorm (with or without a bias) and RMSNorm (a block's
// Norm), MLP (of an Activation), Gated (SwiGLU or GeGLU; a block's FeedForward),
// MultiHeadSelfAttention, Block and the loss.
//
// The model has two readable definitions. gorgonia.go writes each layer in
// Gorgonia's own ops: the graph, node by node. model/reference.go writes
// the whole model as float64 loops in the style of llama2.c's run.c, one
// token at a time with its KV cache, every variant inline: the oracle the
// tests hold both paths' forwards and the KV-cache decoder to. Read those
// two first; the fused ops compute the same values faster.
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
//   - Every layer has a Path: Fused (the zero value, internal/ops' ops) or
//     Gorgonia (gorgonia.go: Gorgonia's own Mul, Transpose,
//     Reshape, Slice, BatchedMatMul, ByIndices and element-wise arithmetic,
//     gradients derived by gorgonia.Grad). Both compute the same function of
//     the same weights; tests hold outputs and gradients equal. The Gorgonia
//     path keeps an internal/ops op only where Gorgonia's is wrong (the
//     masked softmax; LayerNorm and RMSNorm avoid InverseSqrt) or missing
//     (ops.Erf in the exact GELU), each upstream fact pinned in
//     upstream_test.go.
//   - Every node Forward adds is named after its layer, from the weights'
//     checkpoint names ("blocks.0.attn.qkv.weight" gives "blocks.0.attn.qkv",
//     "blocks.0.attn.scores", ...), helper nodes included (NameAs).
//   - A build step that fails raises its error (internal/raise) and the
//     exported Forward that started the build returns it: inside a builder
//     each node is one line, node(name)(op(...)), with its shape comment.
//     Options are structs whose zero value is the default
//     (AttentionOptions: causal, fused); Forward returns what it built
//     (AttentionOutput, BlockOutput) and stores nothing on the layer.
//   - Attention nodes, named after the layer ("blocks.0.attn"): on the
//     fused path ".qkv" (the projection), ".qk_norm" (QK-norm of its query
//     and key heads, ops.QKNorm, when the layer has it), ".heads" (reshape to
//     (B, T, 3, H, d) and permute to (3, B, H, T, d) in one op), ".scores"
//     (q k^T per (batch, head)), ".weights" (the masked softmax),
//     ".context" (w v), ".merged" (permute back and reshape) and ".out";
//     on the Gorgonia path ".qkv" (BatchedMatMul with W's transpose flag,
//     BroadcastAdd), ".qkv_5d" (Reshape), ".heads" (Transpose), ".q", ".k",
//     ".v" (Slice), ".q_norm", ".k_norm" (QK-norm's RMSNorm of q and k,
//     when the layer has it; with QKNorm.All, before the split, of
//     ".q_cols" and ".k_cols" (Slice), joined with ".v_cols" into
//     ".qk_norm" by Concat), ".scores" (BatchedMatMul), ".weights",
//     ".context" (BatchedMatMul), ".context_bthd" (Transpose), ".merged"
//     (Reshape) and ".out". Both add ".dropped" with a dropout mask and
//     ".capped" (the soft-capped scores, scores.go: ops.SoftCap, or
//     ".capped.tanh_arg", ".capped.tanh" and ".capped" on the Gorgonia
//     path) with a soft-cap; when the Tap wants them, ".scores_masked"
//     (ops.MaskScores: the scores as TransformerLens's hook_attn_scores,
//     which the softmax then reads) and ".result" (each head's output
//     through its slice of W_out, result.go, with ".result_change" when
//     the Tap hooks it).
//   - A layer's Tap (tap.go) is how a graph's builder reads and may
//     replace its activations: the layer calls Tap.At at each, named after
//     the layer (".q", ".k", ".v" and with rotary positions ".q_in",
//     ".k_in"; ".scores", ".weights", ".head_out", ".result"; a norm's
//     ".scale" and ".normalized"; an MLP's ".pre", ".pre_linear",
//     ".post"; a block's ".attn_out", ".resid_mid", ".mlp_out"), and goes
//     on with the node At returns. What a plain forward of the fused path
//     does not compute is built only when Tap.Wants it: q, k and v put
//     that layer's attention core on the Gorgonia path (its projections
//     stay fused), a norm's scale (and an RMSNorm's normalized rows) put
//     that norm on it; a plain forward builds the same nodes with or
//     without a Tap.
//   - Block nodes, named after the block ("blocks.0"): ".attn_residual"
//     and ".mlp_residual" (the residual adds), ".parallel_sum" (the
//     parallel residual's mlp + attn); its norms are named by their
//     weights ("blocks.0.ln1", "blocks.0.ln1_post"), and a norm that scales
//     by (Offset + w) adds ".scale" ("blocks.0.ln1.scale", Gorgonia's Add
//     on both paths).
//   - A head is AttentionOptions.HeadDim wide (D/H when 0): the projection
//     gives (H + 2G)·d columns and the merged heads (B*T, H·d) go through
//     an out projection H·d -> D. Rotary positions come as per-pair inverse
//     frequencies (RotaryFreqs), which the caller computes (a model config:
//     its base, scaling, rotary_dims and the layer's own base): no layer or
//     op knows a base or a scaling rule, and each layer of a model may have
//     its own frequencies and window.
//   - The fused path's ops are internal/ops' (one op per layer, exact
//     hand-written gradients, reused output buffers: a node's value is only
//     valid until the next run of its graph). This package only decides
//     which op or which Gorgonia built-ins a layer writes; it holds no op and
//     no numerical loop. Attention dropout is a caller-supplied mask
//     (FillDropoutMask), never gorgonia.Dropout.
package layers
