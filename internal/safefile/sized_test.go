package safefile

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestReadSized: a content larger than the limit is refused from its size,
// with ReadLimit's message, before a byte is read; a content is read no
// further than its size (a file grown since it was opened).
func TestReadSized(t *testing.T) {
	grown := bytes.NewReader([]byte("0123456789"))
	r := io.NewSectionReader(grown, 0, 10)
	if _, err := ReadSized(r, "big.json", 9, "a test file may hold"); err == nil || err.Error() != "big.json is 10 bytes, more than the 9 bytes a test file may hold" {
		t.Errorf("over the limit: %v", err)
	}
	if n, _ := r.Seek(0, io.SeekCurrent); n != 0 {
		t.Errorf("read %d bytes before refusing", n)
	}
	short := struct {
		io.Reader
		sized
	}{strings.NewReader("0123456789 and more"), 10}
	raw, err := ReadSized(short, "grown.json", 64, "a test file may hold")
	if err != nil || string(raw) != "0123456789" {
		t.Errorf("read %q, %v; want the 10 bytes of its size", raw, err)
	}
}

type sized int64

func (s sized) Size() int64 { return int64(s) }
