package htmlview

import (
	"math"
	"testing"
)

// TestMapRoundTrip: a map decodes to its weights at float32 precision,
// zero above the diagonal whatever was there, and the string carries the
// lower triangle alone (4 bytes a weight before base64); a string of
// another length or not base64 is refused.
func TestMapRoundTrip(t *testing.T) {
	const n = 5
	m := make([][]float64, n)
	for q := range m {
		m[q] = make([]float64, n)
		for k := range m[q] {
			m[q][k] = math.Sin(float64(1 + q*n + k)) // above the diagonal too
		}
	}
	s := EncodeMap(m)
	if want := (4*n*(n+1)/2 + 2) / 3 * 4; len(s) != want {
		t.Errorf("the map of %d tokens is %d bytes, want %d (the lower triangle in float32, base64)", n, len(s), want)
	}
	got, ok := DecodeMap(s, n)
	if !ok {
		t.Fatal("the map does not decode")
	}
	for q := range m {
		for k := range m[q] {
			want := float64(float32(m[q][k]))
			if k > q {
				want = 0
			}
			if got[q][k] != want {
				t.Errorf("[%d][%d] = %v, want %v", q, k, got[q][k], want)
			}
		}
	}
	for _, bad := range []struct {
		s string
		t int
	}{{s, n - 1}, {s, n + 1}, {"!" + s[1:], n}} {
		if _, ok := DecodeMap(bad.s, bad.t); ok {
			t.Errorf("DecodeMap(%.12q..., %d) decoded", bad.s, bad.t)
		}
	}
}
