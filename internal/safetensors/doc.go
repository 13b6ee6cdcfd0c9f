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
//   - Write is deterministic: "__metadata__" first (keys sorted, omitted when
//     empty), then the tensors in the order given, their data packed back to
//     back in that same order, and the header padded with spaces so that the
//     data section starts at a multiple of 8 bytes, as the reference
//     implementation does.
//   - Read is strict: anything the reference implementation would reject, and
//     anything ambiguous (duplicate names or keys, null values, gaps, trailing
//     bytes, unknown fields), is an error naming the tensor and the problem in
//     one line. No input makes it panic (see FuzzRead).
//   - ReadFile and ReadFileLimit refuse a path that is not a regular file
//     before opening can block on it, refuse a file over a size limit, and
//     read no more than the header describes plus one byte, so a pipe,
//     /dev/zero or a huge file is an error, not a read that never ends.
//     ReadFileChecked lets the caller refuse a file from its header alone,
//     before any tensor data is read.
//   - Tensors come back in data order (which for files this package wrote is
//     the order they were written in), and their Data slices alias the input.
package safetensors
