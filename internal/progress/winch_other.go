//go:build !unix

package progress

import "os"

// WatchResize does nothing where there is no SIGWINCH: the width read at
// the start stays.
func WatchResize(*os.File, func(int)) (stop func()) { return func() {} }
