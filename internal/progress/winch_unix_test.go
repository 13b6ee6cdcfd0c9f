//go:build unix

package progress

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestWatchResize: a SIGWINCH reaches the resize callback with the width
// read from the file (a pipe here, so the default), and after stop none does.
func TestWatchResize(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	got := make(chan int, 4)
	stop := WatchResize(w, func(width int) { got <- width })
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	select {
	case width := <-got:
		if width != DefaultWidth {
			t.Errorf("resize(%d), want the default %d for a pipe", width, DefaultWidth)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no resize after SIGWINCH")
	}
	stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	select {
	case width := <-got:
		t.Errorf("resize(%d) after stop", width)
	case <-time.After(200 * time.Millisecond):
	}
}
