// Command bench times training steps of small models side by side in Go
// (model.Build + train.Adam on a reused TapeMachine, as the training loop runs
// them) and in PyTorch (cmd/bench/torch_ref.py), for the configurations of -configs
// (S, M, sort and L4 by default), and prints one table (-path fused,gorgonia: the Go side on each attention
// path). Run it from the repository root:
//
//	go run ./cmd/bench                                        # pure-Go default
//	CGO_LDFLAGS=-lopenblas go run -tags openblas ./cmd/bench  # Go side on OpenBLAS
//
// With -decode it times inference instead, against cmd/bench/torch_decode.py:
// greedy decoding with the KV cache on sort's model (-decode-config sort,
// the default), or on GPT-2 small's shape with random weights
// (-decode-config gpt2) or a Llama of llama2.c's stories110M's shape
// (-decode-config llama), with random weights, where it also measures the
// machine's read bandwidth and the decoding speed it allows, and a forward
// over 256 tokens keeping every attention map, as inspect runs it:
//
//	go run ./cmd/bench -decode -decode-config gpt2 -rounds 2 -reps 3
//	go run ./cmd/bench -decode -decode-config llama -llama2c ~/llama2.c -rounds 2 -reps 3
//
// -decode-config llama3-8b times a model of Llama 3.1 8B's shape opened as
// inspect and sample open one: the bench writes a Hugging Face directory
// of random BF16 weights (config.json as transformers writes Llama 3.1's,
// four shards of at most 5 GB and their index; 16 GB, streamed a tensor
// at a time, the same bytes from the same seed) into the directory
// -model-dir names, which must be new or empty, on a disk with room for
// it (statfs), and not an input (the output rule of docs/faults.md); a
// later run recognises the directory by its config, index, shard sizes and
// headers and reuses it, and never writes over another. A write
// interrupted leaves its temporary directory beside DIR, which the next
// run names for the user to remove. It opens the
// directory mapped and reports decoding at batch 1 with the KV cache
// against the limit a read probe over the same mapped bytes sets (per
// round, probed before and after), and a forward over 256 tokens against
// the project's float32 GEMM at that shape. PyTorch is not run:
//
//	go run ./cmd/bench -decode -decode-config llama3-8b -model-dir /data/llama3-8b -rounds 3 -reps 3
//
// With -llama2c DIR (a checkout of github.com/karpathy/llama2.c; the bench
// fetches nothing) the Llama is also timed on llama2.c's run.c: compiled
// from DIR into a temporary directory (gcc -Ofast -fopenmp -march=native),
// given the same weights in its model file format, generating greedily on
// every core. Without it that column is skipped with a notice.
//
// It installs nothing: it checks that /usr/bin/python3 imports torch and that
// torch runs on OpenBLAS, and names the apt-get command otherwise.
package main
