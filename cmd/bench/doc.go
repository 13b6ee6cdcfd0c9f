// Command bench times training steps of the lesson model side by side in Go
// (model.Build + train.Adam on a reused TapeMachine, as the training loop runs
// them) and in PyTorch (cmd/bench/torch_ref.py), for the configurations S and M,
// and prints one table. Run it from the repository root:
//
//	go run ./cmd/bench                                        # pure-Go default
//	CGO_LDFLAGS=-lopenblas go run -tags openblas ./cmd/bench  # Go side on OpenBLAS
//
// It installs nothing: it checks that /usr/bin/python3 imports torch and that
// torch runs on OpenBLAS, and names the apt-get command otherwise.
package main
