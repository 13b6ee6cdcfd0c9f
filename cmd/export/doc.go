// Command export writes a model train wrote as a Hugging Face GPT-2
// directory, which transformers' GPT2LMHeadModel.from_pretrained (and so
// TransformerLens) reads, as do inspect and sample.
//
//	export MODEL -out DIR [-data FILE]
//
// The model is the first argument or -checkpoint, as in inspect: a run
// directory or a checkpoint file; flags may stand before or after it.
//
// Conventions:
//   - What is written (hf.SaveGPT2): config.json with GPT2LMHeadModel's
//     keys, model.safetensors in float32 under GPT-2's names, Conv1D
//     weights stored (in, out), lm_head.weight only when untied; and the
//     tokenizer where Hugging Face has files for it: a run fine-tuned from
//     a GPT-2 gets the run's copies of its tokenizer files, each checked
//     against the run's record on the bytes read (initfrom.Record), or
//     GPT-2's own vocab.json and merges.txt (tokenizer.GPT2Files).
//     config.json names the tokenizer's beginning- and end-of-text ids,
//     null for a model without a tokenizer. A character model, a toy
//     task's model and a lone checkpoint whose tokenizer stayed in its run
//     get no tokenizer file, said in one note on stderr. stdout is one line
//     naming the files written and the model's shape.
//   - Only GPT-2's block exports (hf.GPT2Shaped): any other model is
//     refused in one line naming every key that differs, from the
//     checkpoint's header before its weights are read
//     (checkpoint.Peek). A model trained elsewhere (a Hugging Face
//     directory, a nanoGPT ckpt.pt) is refused: export writes the lab's own.
//   - The output rule: DIR must be new or an empty directory
//     (safefile.CheckNewDir), and neither it nor a file written in it may
//     be an input of the model (safefile.CheckOutput with open.Inputs, then
//     Opened.Inputs), all checked before anything is read. DIR is written
//     whole in a temporary directory beside it and renamed into place
//     (safefile.WriteDirAtomic): a failure leaves no DIR and nothing else.
//   - The model is opened by package open, as inspect opens it: a run
//     directory of a text model reads the text its run recorded (-data
//     names a moved copy).
package main
