package heads_test

import (
	"fmt"

	"github.com/attnscope/attnscope/heads"
)

// A head that reads the previous token, on "a b a b": row 0 can only read
// itself, every later row puts all its mass on the key just before it. On a
// sequence of period 2 the previous token is also the one after the earlier
// occurrence of the current token, so induction scores 1 as well: one
// sequence cannot tell them apart, which is why roles are pooled over many
// random examples. Ties go to the earlier pattern in Patterns.
func ExampleScore() {
	w := [][]float64{
		{1, 0, 0, 0},
		{1, 0, 0, 0},
		{0, 1, 0, 0},
		{0, 0, 1, 0},
	}
	r, err := heads.Score(w, []int{7, 3, 7, 3}, heads.Options{Separator: heads.NoSeparator})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r)
	fmt.Printf("induction %.2f, entropy %.2f nats\n", r.Scores[heads.Induction], r.Entropy)
	// Output:
	// previous-token (1.00)
	// induction 1.00, entropy 0.00 nats
}
