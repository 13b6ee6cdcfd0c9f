//go:build openblas

package layers

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/openblas"
)

// With the openblas build tag every GEMM of the graph (this package's ops and
// Gorgonia's own) goes through OpenBLAS by cgo, instead of this package's
// assembly kernel. OpenBLAS runs on one thread and large products are split
// by rows over the cores by this package (blasSgemm). Build with
// CGO_LDFLAGS=-lopenblas and Debian's libopenblas-dev installed.
func init() {
	sgemmPreferBLAS = true
	blasSplitRows = true
	openblas.SetThreads(1)
	gorgonia.Use(netlib.Implementation{})
	blas32.Use(netlib.Implementation{})
	blas64.Use(netlib.Implementation{})
}
