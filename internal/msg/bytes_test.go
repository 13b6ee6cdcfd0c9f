package msg

import "testing"

// TestBytes: each unit from bytes to yobibytes, at its boundary and between.
func TestBytes(t *testing.T) {
	for b, want := range map[float64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 8 << 30: "8.0 GiB",
		3 << 40: "3.0 TiB", 1 << 60: "1.0 EiB", 2.7e22: "22.9 ZiB", 1 << 80: "1.0 YiB", 1 << 90: "1024.0 YiB",
	} {
		if got := Bytes(b); got != want {
			t.Errorf("Bytes(%v) = %q, want %q", b, got, want)
		}
	}
}
