// Command sample lets a trained checkpoint write.
//
//	sample -checkpoint FILE [-prompt TEXT | -tokens IDS] [-n N]
//	       [-temperature T] [-top-k K] [-top-p P] [-seed S] [-samples M]
//	       [-no-cache] [-path fused|gorgonia]
//	sample -checkpoint FILE -eval [-no-cache]
//
// Conventions:
//   - The task comes from the checkpoint's run config, as in inspect. On a
//     generated task without a prompt, -samples held-out examples (the run's
//     held-out stream) are fed up to their answer, the model writes the
//     answer, and each is printed as input, target and model rows with a
//     mark under every wrong token. On text without a prompt, the first half
//     of held-out windows is the prompt and the model writes the rest.
//   - -prompt is text for the text task (its characters) and token labels
//     ("3 1 4 SEP") for the others; -tokens takes ids. With a prompt the
//     model writes -n tokens, -samples times.
//   - -eval writes the answer of every row of the run's held-out set
//     greedily and prints the exact match beside the teacher-forced figure
//     training logs.
//   - Picking (package generate): greedy at -temperature 0 (the default) or
//     -top-k 1; otherwise seeded by -seed. -no-cache recomputes the whole
//     prefix every step instead of using the KV cache; both write the same
//     tokens.
package main
