package kernels

// AddTo sets z = x + y element by element, for slices of one length (y and
// z may be x). Every path gives the same bits, as for SubTo, MulTo, DivTo,
// ScaleTo and ScaleBy.
func AddTo(x, y, z []float32) {
	y, z = y[:len(x)], z[:len(x)]
	for i := inLanes(addFloat32s, x, y, z); i < len(x); i++ {
		z[i] = x[i] + y[i]
	}
}

// SubTo sets z = x - y element by element, as AddTo.
func SubTo(x, y, z []float32) {
	y, z = y[:len(x)], z[:len(x)]
	for i := inLanes(subFloat32s, x, y, z); i < len(x); i++ {
		z[i] = x[i] - y[i]
	}
}

// MulTo sets z = x * y element by element, as AddTo.
func MulTo(x, y, z []float32) {
	y, z = y[:len(x)], z[:len(x)]
	for i := inLanes(mulFloat32s, x, y, z); i < len(x); i++ {
		z[i] = x[i] * y[i]
	}
}

// DivTo sets z = x / y element by element, as AddTo.
func DivTo(x, y, z []float32) {
	y, z = y[:len(x)], z[:len(x)]
	for i := inLanes(divFloat32s, x, y, z); i < len(x); i++ {
		z[i] = x[i] / y[i]
	}
}

// inLanes runs the assembly loop lanes over the whole groups of eight of x,
// y and z, and returns how many elements it did: the caller's Go loop does
// the rest (all of them on the generic path).
func inLanes(lanes func(n int, x, y, z *float32), x, y, z []float32) int {
	n := vectorPart(len(x))
	if n > 0 {
		lanes(n, &x[0], &y[0], &z[0])
	}
	return n
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

// ScaleBy multiplies x by s in place.
func ScaleBy(x []float32, s float32) { ScaleTo(x, s, x) }
