package raise

// raised carries an error from the call that raised it to the Catch of the
// exported function that started the build. It is private, so Catch never
// swallows a panic it did not make.
type raised struct{ err error }

// If raises err when it is not nil.
func If(err error) {
	if err != nil {
		panic(raised{err})
	}
}

// Must returns v, or raises err when it is not nil. It fits any call that
// returns a value and an error: n := raise.Must(gorgonia.Mul(x, w)).
func Must[T any](v T, err error) T {
	If(err)
	return v
}

// Catch, deferred with the address of a function's named error result,
// turns a raised error back into that result. Any other panic goes on.
func Catch(err *error) {
	if r := recover(); r != nil {
		e, ok := r.(raised)
		if !ok {
			panic(r)
		}
		*err = e.err
	}
}
