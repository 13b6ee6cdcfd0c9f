package kernels

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestShareRaisesAHelpersPanicOnTheCaller: a part that panics on a helper
// goroutine (as a fault on a truncated mapped file does there, the helpers
// running with debug.SetPanicOnFault) is raised again on the loop's
// caller, which can recover it, instead of ending the process.
func TestShareRaisesAHelpersPanicOnTheCaller(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	onHelper := func() bool { // helpers turn faults into panics; the test's goroutine does not
		old := debug.SetPanicOnFault(true)
		debug.SetPanicOnFault(old)
		return old
	}
	got := func() (r any) {
		defer func() { r = recover() }()
		share(2, func() {
			if onHelper() {
				panic("raised on a helper")
			}
		})
		return nil
	}()
	if got != "raised on a helper" {
		t.Fatalf("share recovered %v on its caller; want the helper's panic", got)
	}
}
