package kernels

import "unsafe"

// PrefetchRows asks the core to bring x[r*stride+lo : r*stride+hi] into
// its caches for every r < rows, and returns at once; it changes nothing
// and reads nothing x does not hold. A decoding step's attention reads a
// few slots of every row of a transposed cache (d rows per head) just
// after its GEMVs have streamed the layer's weights through the caches:
// read one row at a time, each row's lines are a wait for memory of their
// own, while requested together they arrive side by side.
func PrefetchRows[T any](x []T, rows, stride, lo, hi int) {
	if rows <= 0 || hi <= lo {
		return
	}
	_ = x[(rows-1)*stride+hi-1] // every line asked for is x's
	var zero T
	size := int(unsafe.Sizeof(zero))
	prefetchRows(unsafe.Pointer(&x[lo]), rows, stride*size, (hi-lo)*size)
}
