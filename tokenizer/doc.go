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
//   - Any other tokenizer.json whose parts are built, by ReadTokenizerJSON,
//     run from its parts as Hugging Face's tokenizers runs them
//     (readStages): the normalizer (NFC, NFD, NFKC, NFKD, Prepend, Replace
//     of a String, Sequence), the pre-tokenizer (Split by a String or a
//     Regex, ByteLevel, Metaspace, Digits, Punctuation, Sequence; a
//     preTokenizer yields pieces), the model (a BPE, byte-level when the
//     pre-tokenizer ends in ByteLevel, else with byte fallback:
//     SentencePiece's "▁" for a space and <0xNN> tokens), the
//     post-processor (TemplateProcessing: special tokens around the text;
//     ByteLevel) and the decoder (ByteLevel, or Replace "▁", ByteFallback,
//     Fuse, Strip, Metaspace), which gives each token's bytes. A part not
//     built is refused by name with the path of its key
//     ("pre_tokenizer.pretokenizers[1].type is ..."). Llama 3.1's, Qwen
//     3's, Gemma 3's, Llama 2's, cl100k's and a GPT-NeoX-style file give
//     Hugging Face's ids on a 111 KB corpus.
//   - A Split's Regex runs in regexp2 (look-around, .NET's syntax, which
//     reads today's patterns as Oniguruma does), each match with a 200 ms
//     deadline; a pattern is tried on runs of one character when the file
//     is read, so one that backtracks catastrophically is refused then.
//     GPT-2's, Llama 3's and Qwen 2's patterns are also written by hand
//     (pretokenize.go), a fast path 2.3-3x faster than regexp2, held
//     equal to it by TestHandWrittenSplitsEqualRegexp2.
//   - Added tokens (special or not) are matched in text as Hugging Face
//     matches them (leftmost, then longest, without overlap) and never
//     split; those marked normalized in normalized text, by their
//     normalized names; single_word, lstrip and rstrip as Hugging Face
//     reads them (addedTokens.split). GPT-2's
//     own file (ByteLevel alone, no normalizer, special added tokens only)
//     keeps GPT-2's encoder's rule instead: special tokens' names are
//     text. Encode puts around the text what the post-processor puts
//     there (Hugging Face's encode, add_special_tokens on). Decode drops
//     the spaces the decoder strips from the start (SentencePiece's first
//     "▁"); a Stream, which continues a text, keeps them. Decode(Encode(s))
//     is s, except where the normalizer changes text for good (NFC, "▁" a
//     space, the "▁" put after each added token).
//   - A tokenizer.json's ids may leave numbers unused, as Hugging Face
//     allows (cl100k's between its vocabulary and its added tokens):
//     Token gives such an id nil.
//   - A nanoGPT character model's characters: NewChars(itos).
//   - None: IDs(n) for a model without tokenizer files, Unbuilt(n, why)
//     for one whose files could not be built; their Encode refuses text
//     (ErrNoTokenizer), Unbuilt's saying why.
//
// Files are read as the project's rules say (docs/faults.md): only the
// files named, regular files of at most 64 MiB, vocabularies of at most
// 2^20 tokens with ids 0..n-1 (a tokenizer.json's may leave some unused),
// JSON with no key twice and nested at
// most 32 deep; every error is one line naming the file and the line or key.
// A tokenizer.json is checked as it is read (jsonStream): its size before
// the first byte, and each vocabulary entry and merge as it is decoded (by
// the splicer, without encoding/json's decoder, which took most of the
// time), so a bad one is refused having read the file only that far; the
// merges are bounded as the vocabulary is (2^20). DecodeTokenizerJSON and
// DecodeGPT2Files read the same files from a file their caller opened
// (safefile.Sized), by the same rules, so that what is built is what the
// caller hashed or checked.
package tokenizer
