package kernels

import "unsafe"

// hugePage is the size of an amd64/arm64 transparent huge page.
const hugePage = 2 << 20

// HugePageAligned returns a zeroed slice of n elements whose first lies
// on a 2 MiB boundary, so that HugePages backs all of it but the last
// partial huge page, where separate slices leave up to a huge page at each
// end of each in 4 KiB pages. A slice smaller than a huge page is a plain
// allocation: it would gain nothing for the 2 MiB spent on aligning it.
func HugePageAligned[T any](n int) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if n*size < hugePage {
		return make([]T, n)
	}
	x := make([]T, n+hugePage/size)
	skip := int((hugePage-uintptr(unsafe.Pointer(&x[0]))%hugePage)%hugePage) / size
	return x[skip : skip+n : skip+n]
}
