// Package safetensors reads and writes the safetensors file format
// (https://github.com/huggingface/safetensors) with nothing but the standard
// library.
//
// A file is an 8-byte little-endian uint64 header length N, then N bytes of
// UTF-8 JSON header, then the data section:
//
//	{"__metadata__": {"key": "value", ...},
//	 "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
//
// data_offsets are [begin, end) byte offsets relative to the start of the data
// section; tensor data is row-major and little-endian.
//
// Conventions:
//   - Write is deterministic: "__metadata__" first (keys sorted), then the
//     tensors in the order given, their data packed back to back in that same
//     order, and the header padded with spaces so that the data section
//     starts at a multiple of 8 bytes, as the reference implementation does.
//   - Every file Write makes records the SHA-256 of its data section (the
//     bytes after the header, in file order) as 64 lowercase hex digits under
//     the metadata key DigestKey, "data_sha256"; a caller's metadata may not
//     set it. The whole-file readers check it when present, a File in Verify
//     or ReadAll, all with one message for a mismatch; every reader hands back
//     the metadata without it, so that callers see what they wrote. A file
//     without it (written before it existed, or elsewhere) reads as before;
//     Verify and ReadAll say that they checked nothing.
//   - WriteSealed writes the same bytes as Write from Streams, tensors whose
//     bytes are encoded a chunk at a time (Float32Encoder, Float64Encoder),
//     in one pass: the header first with a placeholder digest, each chunk
//     hashed while the one before is written on a goroutine of its own, and
//     the digest written over the placeholder at the end (the writer must
//     patch: WriterAt). It holds a few chunks, never the data section.
//   - Reading is strict: anything the reference implementation would reject,
//     and anything ambiguous (duplicate names or keys, null values, gaps,
//     trailing bytes, unknown fields), is an error naming the tensor and the
//     problem in one line, without the file's name (only ReadFile adds it);
//     a name is Go-quoted and a header value escaped (internal/escape), so
//     no control or format character of the file reaches a terminal.
//     No input makes a reader panic (see FuzzRead, FuzzOpen).
//   - Every reader of a path refuses one that is not a regular file before
//     opening can block on it, refuses a file over a size limit, and checks
//     the header's tensors against the file's size before reading any data,
//     so a pipe, /dev/zero, a huge file or a small file whose header claims
//     huge tensors is an error, not a read that never ends or an allocation
//     the file cannot fill.
//   - A header is decoded in one pass, a record at a time, at a bounded
//     cost per record, and refused at its first fault: a bad tensor is
//     refused without decoding the records after it. A caller that knows
//     how many tensors the file may hold, and how many of them may have no
//     elements, says so (OpenBounded); a header listing more is refused at
//     the first one too many, so a header of a million zero-size tensors
//     costs its bytes, not a million records.
//
// Two ways to read:
//   - Read, ReadFile, ReadFileLimit and ReadFileChecked hold the whole data
//     section in memory; tensors come back in data order (for files this
//     package wrote, the order they were written in) as bytes that alias it.
//     ReadFileChecked lets the caller refuse a file from its header alone.
//     Converting those bytes to floats makes a second copy.
//   - Open reads the length prefix and the header only. A File then reads
//     each tensor on demand, straight into a []float32 or []float64 (F32,
//     F64, F16 and BF16 convert), through ReadAt in chunks of at most 1 MiB,
//     so tensors can be read in any order and concurrently, and reading costs
//     the values plus one chunk, never the tensor's bytes whole. OpenSource
//     does the same from a file already open (a Source); its ReadAll reads
//     every byte in order, skipped tensors too, so a Source that hashes what
//     it serves hashes the whole file in the one pass that loads it.
//
// A File opened from a path can also be mapped (Map): its data section
// read-only in memory, a tensor's bytes served in place (Mapping.Bytes),
// for a reader that computes on them as they lie; Widen converts such
// bytes to float32 exactly.
//
// The digest covers the data section as a whole, so checking it means reading
// every byte in order. File.Verify does that on its own (one more pass over
// the file, with one chunk of memory). File.ReadAll is for a loader that
// wants every tensor: it reads them in data order into slices its visit
// function provides, hashing the bytes on the way, so the file is read once
// and memory holds the values once. That is simpler than making Float32 feed
// a running hash when called in order, and needs nothing beyond plain
// safetensors in the file. ReadAll knows the digest is right only after the
// last tensor: on an error the caller discards what it got.
package safetensors
