//go:build openblas

package kernels

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/openblas"
)

// With the openblas build tag every GEMM goes through OpenBLAS by cgo,
// instead of this package's assembly kernel. OpenBLAS runs on one thread and
// large products are split by rows over the cores here (blasSgemm). Build
// with CGO_LDFLAGS=-lopenblas and Debian's libopenblas-dev installed.
// Gorgonia's own ops (the gorgonia attention path) and gonum's blas32 and
// blas64 use OpenBLAS too.
func init() {
	gorgonia.Use(netlib.Implementation{})
	blas32.Use(netlib.Implementation{})
	blas64.Use(netlib.Implementation{})
	sgemmPreferBLAS = true
	blasSplitRows = true
	openblas.SetThreads(1)
	blasImpl = netlib.Implementation{}
}
