//go:build openblas

package layers

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
	"gorgonia.org/gorgonia"
)

// With the openblas build tag Gorgonia's own ops and gonum's blas32/blas64
// use OpenBLAS too, like internal/kernels' GEMMs.
func init() {
	gorgonia.Use(netlib.Implementation{})
	blas32.Use(netlib.Implementation{})
	blas64.Use(netlib.Implementation{})
}
