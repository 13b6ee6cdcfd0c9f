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
//     the first character it cannot encode and where.
package tokenizer
