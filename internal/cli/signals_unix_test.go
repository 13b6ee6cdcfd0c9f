//go:build unix

package cli

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// TestStopOn: the context ends at the signal and caught names it; before
// any signal caught reports none, and stop ends the context too.
func TestStopOn(t *testing.T) {
	ctx, stop, caught := StopOn(context.Background(), syscall.SIGUSR1)
	defer stop()
	if _, ok := caught(); ok || ctx.Err() != nil {
		t.Fatalf("before the signal: caught %v, context %v", ok, ctx.Err())
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the context did not end at SIGUSR1")
	}
	if s, ok := caught(); !ok || s != syscall.SIGUSR1 {
		t.Errorf("caught %v, %v; want SIGUSR1", s, ok)
	}

	ctx, stop, caught = StopOn(context.Background(), syscall.SIGUSR2)
	stop()
	if _, ok := caught(); ok || ctx.Err() == nil {
		t.Errorf("after stop: caught %v, context %v; want no signal and an ended context", ok, ctx.Err())
	}
}
