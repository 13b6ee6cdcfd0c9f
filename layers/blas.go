package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"
)

// GemmBackend names the BLAS implementation the float32 GEMMs of this
// package's ops run on (for benchmark reports).
func GemmBackend() string {
	return fmt.Sprintf("%T", gorgonia.WhichBLAS())
}
