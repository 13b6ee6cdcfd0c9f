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
//     ReadTokenizerJSON (a Hugging Face tokenizer.json), or GPT2(),
//     embedded, for a model that ships no tokenizer. Ids equal GPT-2's own
//     encoder's; the pre-tokenizer's \s is Python's (Unicode White_Space),
//     which npm's gpt-3-encoder, a JavaScript port, differs from on U+0085
//     and U+FEFF. Special tokens' names in text are text, as GPT-2's
//     encoder has them.
//   - The Llama family's tokenizer.json, by ReadTokenizerJSON: Llama 3's
//     and Qwen 2's byte-level BPE (their pre-tokenizer patterns written by
//     hand, as Go's regexp has no lookahead; Qwen 2's text NFC first), and
//     SentencePiece-style BPE with byte fallback (Llama 2, Mistral,
//     TinyLlama: "▁" for a space, one put first, <0xNN> tokens for bytes
//     without a token of their own). Added tokens are matched in text as
//     Hugging Face matches them (leftmost, then longest) and never split.
//     Ids equal Hugging Face's tokenizers' on a 111 KB corpus.
//     Encode puts the beginning-of-text token first when the file's
//     post_processor does (Hugging Face's encode, add_special_tokens on).
//     Decode drops the space SentencePiece put first; a Stream, which
//     continues a text, keeps it. Decode(Encode(s)) is s, except where the
//     model's normalizer changes text for good: NFC for Qwen 2, "▁" a
//     space and the "▁" put after each added token for SentencePiece.
//   - The pre-tokenizers, the byte handling and the merging are separate
//     (bpeTokenizer's stages, bpeModel).
//   - A nanoGPT character model's characters: NewChars(itos).
//   - None: IDs(n) for a model without tokenizer files, Unbuilt(n, why)
//     for one whose files could not be built; their Encode refuses text
//     (ErrNoTokenizer), Unbuilt's saying why.
//
// Files are read as the project's rules say (docs/faults.md): only the
// files named, regular files of at most 64 MiB, vocabularies of at most
// 2^20 tokens with ids exactly 0..n-1, JSON with no key twice and nested at
// most 32 deep; every error is one line naming the file and the line or key.
// A tokenizer.json is checked as it is read (jsonStream): its size before
// the first byte, and each vocabulary entry and merge as it is decoded, so
// a bad one is refused having read the file only that far; the merges are
// bounded as the vocabulary is (2^20). DecodeTokenizerJSON and
// DecodeGPT2Files read the same files from a file their caller opened
// (safefile.Sized), by the same rules, so that what is built is what the
// caller hashed or checked.
package tokenizer
