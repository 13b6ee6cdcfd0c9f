// Package tokenizer turns text into a model's token ids and ids back into
// text, for models trained elsewhere (GPT-2's byte-level BPE, a nanoGPT
// character model's characters) and the lab's own.
//
// Conventions:
//   - A Tokenizer is read from files the user named and is immutable after;
//     every method is safe for concurrent use.
//   - Ids are [0, Size()). A token is bytes, not a string: a byte-level BPE
//     token may hold part of a UTF-8 character, so text is decoded by
//     joining bytes (Decode), and written as it comes through a Stream,
//     which holds a character's bytes until it is whole. Whatever reaches a
//     terminal is escaped by the caller (internal/escape); this package
//     returns the model's bytes as they are.
//   - Encode never drops input: text it cannot represent is an error naming
//     the first character it cannot encode and where. A byte-level BPE
//     encodes any bytes, UTF-8 or not.
//
// Sources:
//   - GPT-2's byte-level BPE: ReadGPT2Files (vocab.json + merges.txt),
//     ReadTokenizerJSON (a Hugging Face tokenizer.json holding a ByteLevel
//     BPE; any other kind is an error naming it), or GPT2(), embedded, for
//     a model that ships no tokenizer. Ids equal GPT-2's own encoder's; the
//     pre-tokenizer's \s is Python's (Unicode White_Space), which npm's
//     gpt-3-encoder, a JavaScript port, differs from on U+0085 and U+FEFF.
//     The pre-tokenizer and the byte handling are separate (byteBPE's
//     pieceLen), for vocabularies that split text another way.
//   - A nanoGPT character model's characters: NewChars(itos).
//
// Files are read as the project's rules say (docs/faults.md): only the
// files named, regular files of at most 64 MiB, vocabularies of at most
// 2^20 tokens with ids exactly 0..n-1, JSON with no key twice and nested at
// most 32 deep; every error is one line naming the file and the line or key.
package tokenizer
