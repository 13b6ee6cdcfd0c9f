//go:build !unix

package main

import "os"

// watchResize does nothing where there is no SIGWINCH: the width read at
// the start stays.
func watchResize(*os.File, func(int)) (stop func()) { return func() {} }
