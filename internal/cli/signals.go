package cli

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Interrupted is the error of a command that a signal stopped and that
// stopped cleanly (train saves a checkpoint): Main prints Message, if any,
// and exits with ExitCode, so that a script can tell the stop from a
// success.
type Interrupted struct {
	Signal  syscall.Signal
	Message string
}

func (e *Interrupted) Error() string { return e.Message }

// ExitCode is 128 plus the signal's number, what a shell reports for a
// process the signal killed: 130 for SIGINT, 143 for SIGTERM, 129 for
// SIGHUP.
func (e *Interrupted) ExitCode() int { return 128 + int(e.Signal) }

// StopOn returns a context cancelled by the first of signals, and caught,
// which reports that signal once it came. After it the default handling
// returns (stop is called), so a second Ctrl-C ends the process at once.
// Call stop when the work is done.
func StopOn(parent context.Context, signals ...os.Signal) (ctx context.Context, stop func(), caught func() (syscall.Signal, bool)) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, signals...)
	var (
		mu  sync.Mutex
		got os.Signal
	)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			signal.Stop(ch)
			cancel()
		})
	}
	go func() {
		select {
		case s := <-ch:
			mu.Lock()
			got = s
			mu.Unlock()
			stop()
		case <-ctx.Done():
			stop()
		}
	}()
	caught = func() (syscall.Signal, bool) {
		mu.Lock()
		defer mu.Unlock()
		s, ok := got.(syscall.Signal)
		return s, ok
	}
	return ctx, stop, caught
}
