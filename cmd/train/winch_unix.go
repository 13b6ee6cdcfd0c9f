//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// watchResize calls resize with the terminal's new width on every SIGWINCH
// until stop is called.
func watchResize(f *os.File, resize func(width int)) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				resize(terminalWidth(f))
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
