// Package generate lets a trained model write: it feeds each sequence's
// prompt one position at a time and appends the tokens it picks, with a
// KV cache (model.Decoder) or by recomputing a full forward of the prefix
// at every step (Recompute), which give the same tokens.
//
// Conventions:
//   - Every row of a batch advances together, one position per step; a row
//     still inside its prompt is fed its next prompt token, so prompts of
//     different lengths share one batch.
//   - Picking is greedy (the largest logit, the lowest id on a tie) at
//     temperature 0 or with top-k 1; otherwise the logits divided by the
//     temperature are cut to the top k and to the smallest set whose
//     probability reaches top-p, and one token is drawn from what remains
//     with the sampler's own seeded generator, rows in order.
//   - Stream hands each token over as soon as it is picked, before the next
//     step, so a caller can print it at once; the draws are Generate's.
//   - NewGrowing's cache starts small (the prompt plus CacheAhead, as
//     cmd/sample asks) and doubles as the rows reach it, so memory follows
//     what is written; MemoryNeed estimates it for a length before anything
//     is built.
//   - A Window lets rows pass the model's context of Size positions as
//     nanoGPT's sample.py does, cropping each to its last Size tokens: up to
//     the context it steps with the cache (or Recompute), and every step past
//     it is one full forward of the cropped window (Recompute.Fill), since a
//     slid window moves every position the cache holds.
//   - Logits holding a NaN or an infinity stop generation with
//     model.NonFinite's words, rather than picking token 0 from them.
//   - A task example's answer is the span from its first to its last scored
//     position: the prompt is the tokens up to and including the first
//     scored position, and the model writes the span's targets.
package generate
