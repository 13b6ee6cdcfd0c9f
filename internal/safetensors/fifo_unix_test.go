//go:build unix

package safetensors

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadFileFIFO: a named pipe has no size, so ReadFile reads what the
// header describes: it accepts a writer that stops there and refuses one
// that keeps writing, without waiting for it to stop (the writer then gets
// EPIPE).
func TestReadFileFIFO(t *testing.T) {
	valid := file(`{"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}`, []byte{1, 2, 3})
	for _, c := range []struct {
		name    string
		endless bool
		want    string // error after "safetensors file PATH: ", "" for none
	}{
		{"writer stops after the data", false, ""},
		{"writer never stops", true, "data bytes from 3 on at the end of the file are covered by no tensor"},
	} {
		path := filepath.Join(t.TempDir(), "pipe")
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		done := make(chan error, 1)
		go func() {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				done <- err
				return
			}
			defer f.Close()
			_, err = f.Write(valid)
			for err == nil && c.endless {
				_, err = f.Write(make([]byte, 4096))
			}
			if c.endless && err != nil {
				err = nil // EPIPE once ReadFile closed its end
			}
			done <- err
		}()
		tensors, _, err := ReadFile(path)
		if c.want == "" && (err != nil || len(tensors) != 1 || string(tensors[0].Data) != "\x01\x02\x03") {
			t.Errorf("%s: %v, %v", c.name, tensors, err)
		}
		if want := "safetensors file " + path + ": " + c.want; c.want != "" && (err == nil || err.Error() != want) {
			t.Errorf("%s: error %v, want %s", c.name, err, want)
		}
		if err := <-done; err != nil {
			t.Errorf("%s: writer: %v", c.name, err)
		}
	}
}
