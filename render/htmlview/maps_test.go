package htmlview

import (
	"encoding/base64"
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

// TestThumbBinsTheMap: a map of 70 positions (uniform causal rows, each
// query's weight spread evenly over its keys) becomes 24 x 24 cells of 3
// positions (the last of 1), each the queries' mean share of the cell's
// keys, counted here query by query: within 1/254 (a byte's step);
// cells above the diagonal are masked, and with a window of 9 so are
// cells whose every key is 9 or more before every query.
func TestThumbBinsTheMap(t *testing.T) {
	const n, k, side = 70, 3, 24
	m := make([][]float64, n)
	for q := range m {
		m[q] = make([]float64, n)
		for key := range q + 1 {
			m[q][key] = 1 / float64(q+1)
		}
	}
	for _, window := range []int{0, 9} {
		b, err := base64.StdEncoding.DecodeString(EncodeThumb(m, window))
		if err != nil || len(b) != side*side {
			t.Fatalf("window %d: %d bytes, %v; want %d x %d", window, len(b), err, side, side)
		}
		for i := range side {
			for j := range side {
				share, queries := 0.0, 0
				for q := i * k; q < min(n, (i+1)*k); q++ {
					queries++
					for key := j * k; key < min(n, (j+1)*k); key++ {
						share += m[q][key]
					}
				}
				share /= float64(queries)
				masked := j > i || (window > 0 && min(n, (j+1)*k)-1 <= i*k-window)
				got := b[i*side+j]
				if masked != (got == MaskedByte) || !masked && math.Abs(float64(got)/254-share) > 0.5/254 {
					t.Errorf("window %d: cell (%d, %d) = %d, want share %.4f (masked %t)", window, i, j, got, share, masked)
				}
			}
		}
	}
}
