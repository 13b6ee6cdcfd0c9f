// Package analysis is what inspect computes, as a library a Go program can
// call: running a checkpoint's model on sequences and reading its attention
// and logits (Forward, Run), naming every head's role over examples of its
// task (ScoreHeads, with package heads), removing heads one at a time on
// the run's held-out set (Ablate, with package ablation), and the induction
// papers' circuit metrics (Measure: prefix matching, copying scores from
// each head's OV circuit, Q/K/V composition between consecutive layers) and
// direct logit attribution (DirectLogitAttribution), activation patching on
// induction examples (Patch), the in-context-learning score (ICL) and the
// logit lens (LogitLens). CopyingEigen is the copying score alone from the
// D x D side, cheap enough for train to record at every evaluation.
//
// Conventions:
//   - Attention is [layer][head][query][key] for one sequence and
//     [layer][example][head][query][key] for a batch; logits are
//     [position][vocab] or flat (batch*T*V).
//   - Every forward pass is checked: a NaN or infinite weight or logit is an
//     error naming the layer, head and position, and the likely cause.
//   - Examples come from the seeds given (data.Fill with PCG(seed, stream)),
//     so the same call gives the same result.
package analysis
