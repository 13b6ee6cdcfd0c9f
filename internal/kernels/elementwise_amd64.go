package kernels

// The element-wise loops of elementwise_amd64.s, n a multiple of 8.

//go:noescape
func addFloat32s(n int, x, y, z *float32)

//go:noescape
func mulFloat32s(n int, x, y, z *float32)

//go:noescape
func subFloat32s(n int, x, y, z *float32)

//go:noescape
func divFloat32s(n int, x, y, z *float32)

//go:noescape
func scaleToFloat32s(n int, x *float32, s float32, z *float32)
