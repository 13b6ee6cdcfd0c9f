// Package nanogpt opens the checkpoints nanoGPT's train.py writes (ckpt.pt)
// as models of package model, with the characters of a character-level
// dataset's meta.pkl.
//
// A ckpt.pt is torch.save's zip of a pickled dict: model (the state dict),
// optimizer, model_args (GPTConfig's fields), iter_num, best_val_loss and
// config. Its entries lie under one folder named after the file torch.save
// wrote (the name is not assumed): data.pkl, data/<key> for each storage
// (raw little-endian bytes), version.
//
// Conventions:
//   - A pickle never runs code. Before it is unpickled (with
//     github.com/nlpodyssey/gopickle), every opcode is walked: every length
//     it carries (a FRAME's included) is checked against the bytes that
//     remain, and every global it names must be on an allow-list: for data.pkl
//     collections.OrderedDict, torch.FloatStorage and
//     torch._utils._rebuild_tensor_v2 (all that a nanoGPT checkpoint
//     names), for meta.pkl none. Globals that cannot be checked before
//     running (protocol 4's STACK_GLOBAL, copyreg extensions) are refused;
//     torch.save writes protocol 2. Allowed globals stand for values of this
//     package: a storage is its zip entry, found and its size checked against
//     the persistent id's numel, and a tensor a view of it, checked to lie
//     inside it; neither is read.
//   - Memory and time are bounded by what the files hold, never by a size
//     they state. data.pkl and meta.pkl are read only up to 4 MiB; gopickle
//     allocates a size before reading what it sizes and decodes big
//     integers in quadratic time, so the walk (checkBounds) also refuses
//     integers past 64 bits, memo indexes from maxMemo on or read before
//     written, and opcodes whose values would take more than
//     maxUnpickledBytes to build. Only the model's tensors are read, once
//     their names, shapes and contiguity are checked against model_args,
//     their total (float32) against Options.MaxBytes, each storage's
//     declared size against what the tensors use of it, and all of them
//     against maxInflation times the bytes they take in the zip. The
//     optimizer's storages are never read. Each storage is streamed, so the
//     zip's CRC-32 is checked and the values are held once.
//   - The mapping: nanoGPT's GPT is GPT-2's pre-LN block with learned
//     positions, exact GELU (model activation gelu), an MLP of 4·n_embd,
//     LayerNorm at eps 1e-5, and Linears and LayerNorms all with a bias or
//     all without (model_args bias: norm_bias, qkv_bias, out_bias,
//     mlp_bias). Names are GPT-2's under "transformer." with Linear weights
//     (out, in), as the project's; c_attn's rows are [q | k | v] with heads
//     contiguous, as the project's qkv. lm_head.weight is the view of
//     transformer.wte.weight (tie_embeddings); one of its own is read as an
//     untied head. The causal masks torch < 2 keeps (transformer.h.N.attn.bias)
//     are skipped, and a compiled run's "_orig_mod." prefix dropped.
//   - meta.pkl is read only when the user names it (Options.Vocab) or it
//     lies beside the checkpoint, never from a path the checkpoint's config
//     names, and one beside the checkpoint never through a symlink; its
//     vocab_size must be the model's, its itos one character per id and
//     its stoi the inverse.
//   - With Options.Digests, ckpt.pt and meta.pkl are each opened once and
//     hashed as read (safefile.HashedFile, Model.Digests).
//   - Every error is one line naming the file (and the zip entry or tensor)
//     and the problem; a name or value from the file (a zip entry, a key,
//     a character) is shown through internal/msg, so no control or format
//     character of it reaches a terminal.
package nanogpt
