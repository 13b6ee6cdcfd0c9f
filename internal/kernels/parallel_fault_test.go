package kernels

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

// TestShareRaisesAHelpersPanicOnTheCaller: a part that panics on a helper
// goroutine (as a fault on a truncated mapped file does there, the helpers
// running with debug.SetPanicOnFault) is raised again on the loop's
// caller, which can recover it, instead of ending the process.
func TestShareRaisesAHelpersPanicOnTheCaller(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
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

// TestShareWaitsForTheHelpersWhenTheCallerPanics: a panic in the caller's
// own part returns only once every helper's part has, so nothing still
// runs a part when the caller recovers.
func TestShareWaitsForTheHelpersWhenTheCallerPanics(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var helperDone atomic.Bool
	func() {
		defer func() { _ = recover() }()
		share(2, func() {
			if !onHelper() {
				panic("raised on the caller")
			}
			time.Sleep(20 * time.Millisecond)
			helperDone.Store(true)
		})
	}()
	if !helperDone.Load() {
		t.Fatal("share returned from the caller's panic before its helper's part was done")
	}
}

// onHelper reports whether the calling goroutine is one of the parallel
// loops' helpers, which alone turn faults into panics.
func onHelper() bool {
	old := debug.SetPanicOnFault(true)
	debug.SetPanicOnFault(old)
	return old
}
