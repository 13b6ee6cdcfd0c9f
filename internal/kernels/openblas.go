//go:build openblas

package kernels

import (
	"gonum.org/v1/netlib/blas/netlib"

	"github.com/attnscope/attnscope/internal/openblas"
)

// With the openblas build tag every GEMM goes through OpenBLAS by cgo,
// instead of this package's assembly kernel. OpenBLAS runs on one thread and
// large products are split by rows over the cores here (blasSgemm). Build
// with CGO_LDFLAGS=-lopenblas and Debian's libopenblas-dev installed.
func init() {
	sgemmPreferBLAS = true
	blasSplitRows = true
	openblas.SetThreads(1)
	blasImpl = netlib.Implementation{}
}
