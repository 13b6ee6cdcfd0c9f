package train

import (
	"fmt"
	"math"
	"testing"
)

// TestLRSchedule pins values at chosen steps, computed by hand from the
// formulas in LRSchedule.At (tolerance 1e-15).
func TestLRSchedule(t *testing.T) {
	cosine := LRSchedule{Peak: 1e-3, Min: 1e-4, Warmup: 10, Steps: 110, Cosine: true}
	constant := LRSchedule{Peak: 3e-3, Warmup: 4, Steps: 100}
	noWarmup := LRSchedule{Peak: 2e-3, Steps: 5, Cosine: true}
	cases := []struct {
		name string
		s    LRSchedule
		step int
		want float64
	}{
		{"cosine warmup start", cosine, 1, 1e-4},
		{"cosine mid warmup", cosine, 5, 5e-4},
		{"cosine end of warmup is peak", cosine, 10, 1e-3},
		{"cosine quarter", cosine, 35, 1e-4 + 9e-4*0.5*(1+math.Sqrt2/2)},
		{"cosine halfway", cosine, 60, 5.5e-4},
		{"cosine last step is min", cosine, 110, 1e-4},
		{"constant warmup", constant, 1, 7.5e-4},
		{"constant after warmup", constant, 5, 3e-3},
		{"constant last step", constant, 100, 3e-3},
		{"no warmup first step", noWarmup, 1, 1e-3 * (1 + math.Cos(math.Pi/5))},
		{"no warmup decays to zero", noWarmup, 5, 0},
	}
	for _, c := range cases {
		if got := c.s.At(c.step); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%s: At(%d) = %.17g, want %.17g", c.name, c.step, got, c.want)
		}
	}
}

// The sort config's schedule: 100 warmup steps to 3e-3, then a cosine to
// 3e-4 at step 4000.
func ExampleLRSchedule_At() {
	s := LRSchedule{Peak: 3e-3, Min: 3e-4, Warmup: 100, Steps: 4000, Cosine: true}
	for _, step := range []int{1, 50, 100, 2050, 4000} {
		fmt.Printf("step %4d: lr %.6f\n", step, s.At(step))
	}
	// Output:
	// step    1: lr 0.000030
	// step   50: lr 0.001500
	// step  100: lr 0.003000
	// step 2050: lr 0.001650
	// step 4000: lr 0.000300
}
