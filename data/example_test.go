package data_test

import (
	"fmt"
	"strings"

	"github.com/attnscope/attnscope/data"
)

// One reverse example: the model reads tokens and predicts targets; only the
// positions marked ^ (from the separator on) are scored.
func Example() {
	task, err := data.New(data.TaskConfig{Name: "reverse", Length: 4, Symbols: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	b := data.EvalSet(task, 1, 1)
	labels := func(ids []int) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = fmt.Sprintf("%3s", task.Label(id))
		}
		return strings.Join(s, " ")
	}
	scored := make([]string, len(b.Mask))
	for i, m := range b.Mask {
		scored[i] = "   "
		if m == 1 {
			scored[i] = "  ^"
		}
	}
	fmt.Println("vocab", task.Vocab(), "seqlen", task.SeqLen())
	fmt.Println("tokens ", labels(b.Tokens))
	fmt.Println("targets", labels(b.Targets))
	fmt.Println("scored ", strings.Join(scored, " "))
	// Output:
	// vocab 11 seqlen 8
	// tokens    5   3   4   9 SEP   9   4   3
	// targets   3   4   9 SEP   9   4   3   5
	// scored                    ^   ^   ^   ^
}
