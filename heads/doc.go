// Package heads names what an attention head does from its weights.
//
// Conventions:
//   - A head's weights for one sequence are a square (T, T) matrix w with
//     rows = queries and columns = keys; w[i][j] is how much position i reads
//     from position j. Only the causal part j <= i is read; entries above the
//     diagonal are ignored (a causal model holds exactly 0 there).
//   - A pattern gives every query row i a set S(i) of target keys among its
//     causal keys 0..i (previous-token: {i-1}; self: {i}; first-token: {0};
//     separator: the separator positions; offset k: {i-k}; duplicate-token:
//     earlier positions holding the same token; induction: the positions just
//     after an earlier occurrence of the current token). Two patterns read
//     token values, as a sorting head does: smallest-remaining (from the
//     first separator on, the positions before it holding the smallest
//     symbol not yet written after it) and next-larger (earlier positions
//     holding the smallest symbol larger than the query's, the separator
//     aside).
//   - The row score is (m - u) / (1 - u), where m is the attention mass on
//     S(i) and u = |S(i)| / (i+1) is the mass a uniform row over the same
//     causal keys would put there. It is 1 for a row that puts all its mass on
//     S(i), 0 for a uniform row and negative below uniform. Rows where S(i) is
//     empty or covers every causal key (u = 1, nothing to tell apart) are not
//     eligible. A pattern's score is the mean row score over eligible rows,
//     pooled over every sequence added, then clamped to [0, 1]. A uniform head
//     therefore scores exactly 0 on every pattern.
//   - Add may restrict the query rows to a task's scored positions: on a
//     copy task the first half's predictions are unconstrained, so what a
//     head does there says little about how the model solves the task.
//   - Entropy is per row in nats over the causal keys, averaged over rows with
//     at least two keys; EntropyNorm divides each row's entropy by log(i+1),
//     so a uniform head has EntropyNorm 1 and a one-hot head 0.
//   - Offsets k = 2 .. T - ceil(T/3) are each scored and the best is kept
//     (Result.OffsetK); the bound keeps at least a third of the rows eligible,
//     so a k that only the last row or two happen to fit cannot win.
//   - The role is the best-scoring pattern if its score reaches the threshold
//     (DefaultThreshold), else Diffuse. Ties go to the earlier pattern in
//     Patterns.
//   - Over a corpus (Window, Spread) the scores are TransformerLens's head
//     detector's instead, so that they read as its do: the share of a
//     head's causal attention mass on the pattern's keys, summed over every
//     row and divided by the whole mass (row 0 and rows without a target
//     count, with nothing on the pattern), with no correction for uniform
//     attention, no clamping and no threshold. Induction's keys there may
//     include the query itself, as TransformerLens's do.
package heads
