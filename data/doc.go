// Package data generates the toy sequence tasks the models train on. It is
// pure Go: no Gorgonia, no files, no clock; every draw comes from a
// math/rand/v2 generator the caller seeds.
//
// Conventions:
//   - Vocabulary: ids 0..symbols-1 are the task's symbols and print as their
//     number ("0", "7", ...). Tasks with two halves (copy, reverse, sort) add one
//     separator id = symbols that prints as "SEP"; their Vocab() is symbols+1.
//     repeat and induction have no separator and Vocab() = symbols. The
//     text task's labels are its characters, raw ("␣" for a space): nothing
//     here escapes; whoever writes a label for a person does
//     (internal/escape). Read through a pretrained model's tokenizer
//     (NewTokenText, for fine-tuning), the text task's ids are the
//     tokenizer's, its vocabulary the model's, its labels the tokens' text
//     (TokenLabel).
//   - Sequence layout: each task defines a full sequence seq of SeqLen()+1
//     tokens. The model reads tokens = seq[:T] and is trained to predict
//     targets = seq[1:T+1] (next token), with T = SeqLen(), which is also the
//     model's Context.
//     repeat (length L, T = L): one random symbol s repeated, seq = s s ... s.
//     copy, reverse, sort (length L, T = 2L): L random symbols x (drawn
//     independently, repeats allowed), SEP, then f(x): x itself for copy, x
//     reversed for reverse, x sorted ascending for sort. seq has 2L+1 tokens.
//     induction (length T): seq has T+1 symbols. A block of L symbols, L
//     drawn from InductionBlockRange(T), occurs twice at random places (the
//     second copy after the first, not overlapping); every other symbol is
//     drawn distinct from all the others, so a symbol occurs twice only in
//     the block. The answer at a second-copy symbol is therefore the symbol
//     after its earlier occurrence, which no fixed offset or position finds.
//     repeated-tokens (a model trained elsewhere, over its tokenizer's ids;
//     RepeatedTokens): [BOS] then Half distinct random ordinary tokens
//     (neither BOS nor any end-of-text id), then the same Half again; the
//     second copy is scored. With fewer than Half ordinary tokens a copy
//     draws them with replacement (RepeatedTokens.Note says so).
//   - No draw depends on luck to end: a draw that rejects ids (DrawExcept)
//     rejects at most MaxRejections times, then picks among the ids left.
//   - What is scored: the loss mask is 1 where the target is a token the model
//     can know. For repeat that is every position. For the two-half tasks it
//     is positions L..2L-1, whose targets are the L tokens after SEP; the
//     random first half and the SEP itself are never scored. For induction
//     it is the second copy from its second symbol on: positions
//     second..second+L-2.
//   - Batches are flat (Size*SeqLen) vectors in row-major (row, position)
//     order, as model.Graph.Feed takes them.
//   - Randomness: a training batch comes from whatever generator the caller
//     passes (per-step streams rand.NewPCG(seed, step), see StepRNG); EvalSet
//     draws from rand.NewPCG(seed, EvalStream), a stream no step number
//     reaches, so evaluation never replays the training stream. Small tasks
//     (repeat has only symbols distinct sequences) still share examples
//     with training: the stream is held out, not the content.
package data
