package msg

import "testing"

// TestCount: one is singular, zero and more are plural.
func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 heads"}, {1, "1 head"}, {2, "2 heads"}} {
		if got := Count(c.n, "head"); got != c.want {
			t.Errorf("Count(%d, head) = %q, want %q", c.n, got, c.want)
		}
	}
}
