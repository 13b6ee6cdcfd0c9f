// Command sample lets a trained checkpoint write.
//
//	sample MODEL [-prompt TEXT | -tokens IDS] [-n N]
//	       [-temperature T] [-top-k K] [-top-p P] [-seed S] [-samples M]
//	       [-crop] [-no-cache] [-raw] [-path fused|gorgonia]
//	sample MODEL -eval [-no-cache]
//
// The model is the first argument or -checkpoint, as in inspect; flags may
// stand before or after it.
//
// Conventions:
//   - A model trained elsewhere (a Hugging Face directory, a nanoGPT
//     ckpt.pt; package open) writes in its tokenizer's text: -prompt (or
//     -text) is encoded by it, without one the model starts from its
//     beginning-of-text token (a character model without one from a
//     newline, as nanoGPT's sample.py, said on stderr; the beginning of
//     text is not echoed as text unless -raw or -tokens gave it), and
//     each row stops after -n tokens (64 by
//     default) or at any of its end-of-text tokens (open.Opened.EOS: a
//     Llama 3 instruct model has three); a character split across tokens
//     is held until it is whole, then escaped like every model text. What
//     was built of its files is noted on stderr before it writes, in the
//     words of inspect's model card (model.Config.Card).
//   - The task comes from the checkpoint's run config, as in inspect. On a
//     generated task without a prompt, -samples held-out examples (the run's
//     held-out stream) are fed up to their answer, the model writes the
//     answer, and each is printed as input, target and model rows with a
//     mark under every wrong token. On text without a prompt, the first half
//     of held-out windows is the prompt and the model writes the rest.
//   - -prompt is text for the text task (its characters) and token labels
//     ("3 1 4 SEP") for the others; -tokens takes ids or names
//     (cli.ParseTokens). -prompt (or -text) must be UTF-8 (cli.CheckText);
//     an error it causes names the flag as the user gave it. -data and
//     -vocab are refused for a model whose kind reads neither (package
//     open). With a prompt the model writes -n tokens, -samples
//     times; a prompt of a task with SEP that lacks it gets a note on
//     stderr saying what the task's prompts look like.
//   - -eval writes the answer of every row of the run's held-out set
//     greedily and prints the exact match beside the teacher-forced figure
//     training logs.
//   - Picking (package generate): greedy at -temperature 0 (the default) or
//     -top-k 1; otherwise seeded by -seed. -no-cache recomputes the whole
//     prefix every step instead of using the KV cache; both write the same
//     tokens.
//   - Output streams: a continuation prints each token as soon as it is
//     picked (the first of -samples rows; the others, drawn in the same
//     steps, each once it ends, so a -seed writes what it always did), and
//     held-out examples print in order as their rows end.
//   - Model text is escaped (package escape): a text model's characters
//     through escape.Text, newline and tab kept and every control, C1 or
//     bidi character shown as \x1b, \u009b, \u202e; labels through
//     escape.Label; held-out text is Go-quoted. -raw writes a text model's
//     continuation byte for byte, for a pipe; it is refused elsewhere
//     (other tasks' labels are digits and SEP, with nothing to escape).
//   - The KV cache starts at the prompt plus generate.CacheAhead and grows
//     as the rows reach it. -n and -samples are bounded before anything is
//     built: rows x (prompt + n) positions must fit model.MaxMemory by
//     generate.MemoryNeed, or the refusal names the estimate and the
//     largest -n or -samples that fits.
//   - The context (planContinuation): a row that passes a learned position
//     table is cropped to its last Context tokens, as nanoGPT's sample.py
//     crops to block_size (generate.Window: one full forward of the window
//     per token past it), said on stderr in one line before anything is
//     written. Other positions write on past a lab model's trained length, and stop
//     at a model trained elsewhere's max_position_embeddings, a longer
//     request refused naming -crop, which crops them as a learned table
//     is. Past the context the bound is the window's, whatever -n.
//   - A checkpoint whose forward pass overflows to NaN or infinity stops at
//     the first such step with inspect's line (model.NonFinite).
package main
