//go:build openblas

package openblas

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int);
import "C"

// SetThreads sets how many threads OpenBLAS runs each call on.
func SetThreads(n int) { C.openblas_set_num_threads(C.int(n)) }
