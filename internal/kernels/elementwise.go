package kernels

// MulTo sets z = x * y element by element, for slices of one length (y and
// z may be x). Every path gives the same bits.
func MulTo(x, y, z []float32) {
	n := vectorPart(len(x))
	if n > 0 {
		mulFloat32s(n, &x[0], &y[0], &z[0])
	}
	y, z = y[:len(x)], z[:len(x)]
	for i := n; i < len(x); i++ {
		z[i] = x[i] * y[i]
	}
}

// SubTo sets z = x - y element by element, as MulTo.
func SubTo(x, y, z []float32) {
	n := vectorPart(len(x))
	if n > 0 {
		subFloat32s(n, &x[0], &y[0], &z[0])
	}
	y, z = y[:len(x)], z[:len(x)]
	for i := n; i < len(x); i++ {
		z[i] = x[i] - y[i]
	}
}

// DivTo sets z = x / y element by element, as MulTo.
func DivTo(x, y, z []float32) {
	n := vectorPart(len(x))
	if n > 0 {
		divFloat32s(n, &x[0], &y[0], &z[0])
	}
	y, z = y[:len(x)], z[:len(x)]
	for i := n; i < len(x); i++ {
		z[i] = x[i] / y[i]
	}
}

// ScaleTo sets z = x * s, for slices of one length (z may be x).
func ScaleTo(x []float32, s float32, z []float32) {
	n := vectorPart(len(x))
	if n > 0 {
		scaleToFloat32s(n, &x[0], s, &z[0])
	}
	z = z[:len(x)]
	for i := n; i < len(x); i++ {
		z[i] = x[i] * s
	}
}
