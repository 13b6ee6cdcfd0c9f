package raise

import (
	"errors"
	"testing"
)

func build(fail bool) (n int, err error) {
	defer Catch(&err)
	n = Must(step(fail))
	return n + 1, nil
}

func step(fail bool) (int, error) {
	if fail {
		return 0, errors.New("step failed")
	}
	return 41, nil
}

// TestCatchReturnsRaisedError: a raised error comes back as the function's
// error, and a build that raises nothing returns its value.
func TestCatchReturnsRaisedError(t *testing.T) {
	if n, err := build(false); n != 42 || err != nil {
		t.Errorf("build(false) = %d, %v; want 42, nil", n, err)
	}
	if _, err := build(true); err == nil || err.Error() != "step failed" {
		t.Errorf("build(true) error %v, want step failed", err)
	}
}

// TestCatchRepanicsOthers: a panic that If or Must did not raise goes on
// unchanged.
func TestCatchRepanicsOthers(t *testing.T) {
	defer func() {
		if r := recover(); r != "not ours" {
			t.Errorf("recovered %v, want the original panic value", r)
		}
	}()
	func() (err error) {
		defer Catch(&err)
		panic("not ours")
	}()
	t.Error("the foreign panic was swallowed")
}
