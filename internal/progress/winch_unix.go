//go:build unix

package progress

import (
	"os"
	"os/signal"
	"syscall"
)

// WatchResize calls resize with the terminal's new width on every SIGWINCH
// until stop is called.
func WatchResize(f *os.File, resize func(width int)) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				resize(Width(f))
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
