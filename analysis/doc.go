// Package analysis is what inspect computes, as a library a Go program can
// call: one forward over a batch that keeps the activations asked for by
// name (RunWithCache, TransformerLens's run_with_cache), read by every
// analysis that only reads a run; naming every head's role over examples of
// its task (ScoreHeads, with package heads), removing heads one at a time on
// the run's held-out set (Ablate, with package ablation), and the induction
// papers' circuit metrics (Measure: prefix matching, copying scores from
// each head's OV circuit, Q/K/V composition between consecutive layers) and
// direct logit attribution (DirectLogitAttribution), activation patching on
// induction examples (Patch) and as TransformerLens's patching module has
// it on any clean and corrupted sequences (PatchStream by layer and
// position, PatchHeads by head; a Metric of the logits), attribution
// patching of every head and stream activation from one forward and
// backward (AttributionPatch, on RunTokensWithGrads: an activation's
// gradient, Cache.Grad), path patching from a head to later heads' q, k
// or v (PathPatch), the in-context-learning score (ICL) and the
// logit lens (LogitLens), and every head's statistics over many windows
// of a text (CorpusHeads, streamed: its memory does not grow with the
// windows). CopyingEigen is the copying score alone from the
// D x D side, cheap enough for train to record at every evaluation.
// MeasureHeads takes the weight-read measures to the heads a user picks
// (HeadsOf reads their rows alone, a mapped BF16 or F16 model's widened a
// head's slice at a time; copying of a few heads of a wide vocabulary
// comes from each head's d x d circuit, read in vocabulary blocks), and
// CircuitsBytes estimates what that holds, so that an 8B model's
// circuits run on a pick of heads in a few hundred MB.
//
// A program holding token ids alone (a tokenizer's Encode) runs
// ForwardTokens on one sequence or RunTokensWithCache on several: each
// position's target is the next token, so no targets or scored positions
// are built by hand (Forward and RunWithCache take them, for a task's
// examples).
//
// Conventions:
//   - Activations are flat tensors with their shape (Tensor), in the
//     model's dtype: float32 for a float32 model and for BF16 and F16
//     files (which compute in float32), float64 for the lab's float64
//     models. A cached run keeps the graph's own values, never a widened
//     copy, so the cache takes half what a float64 one would. They are
//     read as float64 (At, Block, Matrix: views of a float64 model's
//     values, widened copies of a float32 one's) or in their own dtype
//     (Float32s, Float64s); the analyses compute in float64. A layer's
//     attention weights are (B, H, T, T), and Matrix gives one head's
//     (T, T) map as rows. The logits (B*T, V) are a Tensor too (Logits),
//     the largest thing a run keeps. Activations are named as model names
//     them (model.AttnWeights, model.HeadOut, model.ResidPre,
//     model.ResidPost, model.MLPOut; model.Config.Activations lists every
//     one); every function that takes a name takes the lab's,
//     TransformerLens's ("blocks.0.attn.hook_pattern") or a glob of either
//     (model.ResolveActivations). Get gives an activation in the graph's
//     layout, TL in TransformerLens's (batch first). Weights and Circuit
//     list what each use reads. SaveNames and WriteActivations write
//     activations as one safetensors file for numpy (inspect
//     -save-activations).
//   - PatchStream and PatchHeads patch the clean run's activations into
//     the corrupted run (TransformerLens's denoising) and report the
//     metric of each patched run; AttributionPatch and PathPatch patch the
//     corrupted run's into the clean run (noising, the roles swapped for
//     denoising) and report the change of a PatchMetric (the last
//     position's logit difference or the loss: the structure a gradient
//     needs, where a Metric is any function of the logits) from the clean
//     run's.
//   - Interventions (Ablate, Patch, PatchStream, PatchHeads, PathPatch)
//     use the graph's hooks
//     (model.BuildOptions.Hooks), as RunWithHooks runs a caller's
//     functions (model.HookFunc, TransformerLens's run_with_hooks);
//     everything else reads a Cache. They run
//     the model once per head of those given (ablation.Heads, nil for every
//     head) and take a progress callback (heads done of the total), nil for
//     none; nothing here writes to a terminal. Their cost is counted before
//     they run (AblationWork, PatchWork, ActivationPatchWork, PrefixWork: forwards of
//     ForwardFLOPs each, timed at ModelledRate), for a caller to refuse
//     past MaxPerHeadTime.
//   - Every forward pass is checked: a NaN or infinite weight or logit is an
//     error naming the layer, head and position, and the likely cause. A
//     measure the model leaves undefined is not an error: patching whose
//     corruption does not move the logit reports why (Patching.Undefined)
//     and the other measures go on.
//   - Examples come from the seeds given (data.Fill with PCG(seed, stream)),
//     an inspection's from streams of its own range (InspectStreams: never
//     a training batch's), training's circuits probe from ProbeStream, so
//     the same call gives the same result; a draw that rejects ids is
//     bounded (data.DrawExcept), so every call ends. What belongs to a batch
//     (Patch's corruption) is built by the caller from the batch it cached
//     (Corruption, from a stream of its own), never by replaying a draw.
//   - A run is read through its records (package runlog), never its config:
//     what an analysis needs of the run (the held-out set's size, the seed)
//     it takes as values, so analysis imports no rundir (Ablate, Probes).
//   - The readout (the logit lens, direct logit attribution) is the final
//     norm, by (1 + w) with norm_offset, and the LM head, read with each
//     position's own divisor held fixed so that it is linear in the stream.
//     The stream between blocks (resid_pre, resid_post) is a sum of the
//     embeddings and every sublayer's output in every norm placement and
//     with the parallel residual, so both read it as they read a pre-norm
//     model's, and direct logit attribution reads each part from the
//     activation that writes it (resid_pre of block 0, attn.head_out,
//     mlp_out), never by subtraction; with norms after the sublayers a head's part is what it
//     writes through ln1_post, whose divisor is held fixed likewise.
//     Where the readout is not linear the results say so in words, for the
//     views to print beside the numbers: Attribution.Readout
//     (AttributionReadout: the logit before a final soft-cap, heads through
//     ln1_post) and Circuits.LogitLensReadout (LensReadout: the cap
//     applied at every depth).
package analysis
