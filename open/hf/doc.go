// Package hf opens a Hugging Face model directory (config.json, and
// model.safetensors or the shards model.safetensors.index.json lists) as a
// model.Model: GPT-2 (GPT2LMHeadModel: gpt2, distilgpt2, gpt2-medium,
// -large, -xl), Llama 2 and 3.x (LlamaForCausalLM), Mistral
// (MistralForCausalLM), Qwen 2 and 3 (Qwen2ForCausalLM, Qwen3ForCausalLM),
// Gemma 2 and 3 (Gemma2ForCausalLM, Gemma3ForCausalLM, and the text model
// of a Gemma3ForConditionalGeneration, its vision tower skipped), GPT-NeoX
// (GPTNeoXForCausalLM: Pythia), GPT-Neo (GPTNeoForCausalLM: TinyStories),
// Phi-3 (Phi3ForCausalLM) and OLMo 2 (Olmo2ForCausalLM). Load is the one
// entry; package open calls it.
//
// Conventions:
//   - config.json decides the architecture: architectures[0] and model_type
//     must name a row of the architectures table (architectures.go), and
//     every key that would change the forward from the project's is refused
//     naming the key and its value (a rotary scaling other than linear and
//     llama3, bidirectional attention). A key config.json leaves out takes
//     the default transformers' config class gives it. Windows by layer
//     follow layer_types when the file has it, else the model's own rule
//     (Qwen's max_window_layers, Gemma 2's every other layer, Gemma 3's
//     sliding_window_pattern, GPT-Neo's attention_types). A rotary
//     fraction (GPT-NeoX's rotary_pct, Phi's partial_rotary_factor) turns
//     transformers' int(head_dim · fraction) channels. Model.Specials
//     carries the bos_token_id and eos_token_id it names.
//   - Each architecture maps the file's tensor names to the project's
//     parameters (model.Config.ParamSpecs) and says which tensors are
//     buffers to ignore. Names, shapes and dtypes of every file are checked
//     against the config from the headers alone, before any tensor data is
//     read; the float32 weights against Options.MaxBytes from config.json
//     alone, before any file is opened, and the layers and heads against
//     maxLayers and maxHeads, whose cost the weights' size does not show.
//   - Nothing is built per layer before the files' tensor count is known
//     to fit the config (shape, newShape): each header is refused as it is
//     parsed once it lists more tensors than the model has names, or more
//     with no elements than it has buffers (safetensors.OpenBounded), and
//     files with fewer tensors than its parameters are refused before the
//     name table is made. Counts within countSlack of the model's go on to
//     the checks that name the tensor at fault.
//   - Only files the user named are read: config.json,
//     model.safetensors.index.json and the weight files, all inside the
//     directory. A shard name is a plain file name (no separator, not
//     "."/".."), and a file that is a symlink resolving outside the directory
//     is refused: nothing a file names can lead the reader elsewhere. The
//     one exception is the hub cache's own layout: a snapshot directory
//     (models--NAME/snapshots/REV) may link into its repository's blobs
//     (models--NAME/blobs), where the hub keeps the snapshot's files.
//     pytorch_model.bin (a pickle) is never read; a directory holding only it
//     is told to convert it. Inputs lists every file of a directory opening
//     it reads or looks for (the index's shards too), for the output rule.
//   - With Options.Digests each file is opened once and hashed as it is
//     read (Model.Digests): the weights through safetensors.OpenSource,
//     whole and in order, so the digest is of the bytes loaded.
//   - Weights are read once, in each file's data order, straight into the
//     model's float32 values through internal/safetensors (F32, F16 and BF16
//     convert exactly). GPT-2's Conv1D weights, stored (in, out), are read
//     into one scratch buffer of the largest such tensor and transposed into
//     the project's (out, in): the model is held once, plus that buffer.
//     Llama's q_proj, k_proj and v_proj (and their biases) are each read
//     straight into their rows of the project's fused qkv, [q | k | v]. A
//     tensor whose rows go to several places (target.split: GPT-NeoX's
//     query_key_value, laid out head by head; Phi-3's gate_up_proj, two
//     parameters) is read into the same scratch buffer and its rows copied
//     to their places.
//     A model constant transformers holds in the model's dtype (Gemma's
//     embedding normaliser sqrt(hidden_size)) is rounded to the dtype of
//     the file's embedding.
//   - The way back: SaveGPT2 writes a model of GPT-2's block (GPT2Shaped,
//     which names every key of another that differs) as GPT2LMHeadModel's
//     config.json and model.safetensors, in float32, Conv1D weights stored
//     (in, out); Load reads it back bit for bit. cmd/export calls it.
//   - Every error is one line naming the file (or the directory) and the
//     problem. A key, value or name from a file (a config key, a shard
//     name, a tensor name) reaches an error or the "reading" notice through
//     internal/msg, so no control or format character of it reaches a
//     terminal.
package hf
