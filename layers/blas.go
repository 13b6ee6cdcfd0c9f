package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"
)

// GemmBackend names what the float32 GEMMs of this package's ops run on,
// for benchmark reports: this package's assembly kernel, or the BLAS
// Gorgonia is configured with (gonum's pure Go, or OpenBLAS with the
// openblas build tag).
func GemmBackend() string {
	switch {
	case useSgemm() && cpuAVX512:
		return "attnscope sgemm, AVX-512 + AVX2/FMA assembly"
	case useSgemm():
		return "attnscope sgemm, AVX2/FMA assembly"
	}
	return fmt.Sprintf("BLAS %T", gorgonia.WhichBLAS())
}
