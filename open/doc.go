// Package open is the one place that turns what a user names (a run
// directory, or a checkpoint file; a Hugging Face model directory, or a
// nanoGPT ckpt.pt) into a model, its vocabulary and its task. inspect and
// sample open every model through it, so each reads files by the same
// rules.
//
// Conventions:
//   - A checkpoint names files only as data: no file named in its metadata is
//     ever read. A lone checkpoint (a file not inside the run directory that
//     wrote it) opens with its vocabulary alone: the characters of a text
//     model travel in the checkpoint, so prompts, -tokens and the model card
//     work on any machine; windows of its text are drawn only from a file the
//     user names (Options.Data, the -data flag).
//   - A run directory, or a checkpoint inside one, is the user's own run: its
//     config file (rundir.ConfigFile) may name the text file, which is read
//     where training read it (the absolute path the run recorded), unless
//     Options.Data names another copy. The checkpoint's task must agree with
//     the run's config, or the checkpoint does not belong to the run.
//   - Every text file read is checked against the size and SHA-256 the run
//     recorded; a different content is one line naming the file, both sizes
//     and digests, and what to do. A run written before the record was kept
//     opens with one notice that the content cannot be checked. Every text
//     file read is named on Options.Notices (stderr), so a user always knows
//     what was read.
//   - The checkpoint is validated once, here, for inspect and sample alike:
//     the model and the task (rundir.Config.ValidateModel), never values only
//     training uses.
//   - A run that fine-tuned a model trained elsewhere (rundir.Config.InitFrom)
//     opens as that model does (its tokenizer, the repeated-tokens task),
//     with the run's copy of the tokenizer (RunTokenizer: each copy opened
//     once, never through a link, and checked against the run's record on
//     the very bytes it is built from), never the pretrained directory,
//     which may be gone; a lone checkpoint of it has GPT-2's tokenizer or
//     ids.
//     ForFineTuning opens a model for train to fine-tune and records the
//     files read (Opened.Files, Opened.TokenizerFiles), each with the size
//     and SHA-256 of the bytes loaded, hashed as they were read
//     (Opened.Digests). Tokenizer files are no exception: each is opened
//     once and package tokenizer builds from that opening
//     (tokenizer.DecodeTokenizerJSON, DecodeGPT2Files), never from its
//     path, so the bytes hashed are the bytes parsed.
//   - Inputs lists, before the model is loaded, every file opening it reads
//     or may read (by the names the readers look for, there or not), and
//     Opened.Inputs adds every file read: what no output of a command may
//     replace or create (safefile.CheckOutput).
//   - A model trained elsewhere (package open/hf for a directory holding
//     config.json, open/nanogpt for a zip file or a directory holding
//     ckpt.pt) opens with its tokenizer (Opened.Tokenizer: the directory's
//     tokenizer files, a nanoGPT meta.pkl beside the checkpoint or named by
//     Options.Vocab, GPT-2's own for a GPT-2 without files, else token ids)
//     and the repeated-tokens task (data.RepeatedTokens) its heads are
//     scored on; Opened.Origin names where it comes from, and it has no
//     run config (Opened.Run is nil): nothing here records how it was
//     trained, so nothing is made up. A Hugging Face
//     model's tokenizer carries the bos_token_id and eos_token_id its
//     config.json names (Opened.EOS lists every end-of-text id); a Llama,
//     Mistral or Qwen 2 whose tokenizer.json package tokenizer refuses opens
//     on token ids with a notice saying why; a view with no text
//     (Options.NoText: inspect -graph) opens a Hugging Face directory
//     without reading its tokenizer files, on token ids. Its files are read
//     by the rules of those packages: only what the user named, bounded by
//     the headers, no pickle code run.
//   - An option that does not apply to the model's kind is refused, naming
//     it and the kind, before anything is read: Data for any model trained
//     elsewhere, Vocab for all but a nanoGPT checkpoint. Text for a model
//     without a tokenizer (TextFlag: a toy task's checkpoint) is refused
//     from the checkpoint's header, before its weights are read.
package open
