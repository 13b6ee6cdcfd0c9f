//go:build !amd64

package layers

// sgemmKernel6x16 exists only on amd64; sgemmKernel stays false elsewhere.
func sgemmKernel6x16(kc int, a, b, c *float32, ldc int, add int) {
	panic("layers: no float32 GEMM kernel on this architecture")
}
