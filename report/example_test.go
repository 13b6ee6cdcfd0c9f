package report_test

import (
	"fmt"
	"os"

	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/report"
)

// A Go program inspects the committed induction run without the command,
// opening it as inspect does:
// every head's role over 64 examples of its task, as inspect -summary
// prints it.
func ExampleBuild() {
	op, err := open.Open("../testdata/induction", open.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	model := report.Subject{Model: op.Model, Run: op.Run, Step: op.Step, Task: op.Task, Origin: op.Origin, Tokenizer: op.Tokenizer, Inputs: op.Inputs}
	r, err := report.Build(model, report.Options{Checkpoint: "../testdata/induction", Layers: report.Every, Heads: report.Every, Samples: 64, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := render.WriteInspect(os.Stdout, r.Text(true), render.Plain, 100); err != nil {
		fmt.Println(err)
	}
	// Output:
	// checkpoint ../testdata/induction (step 3000)
	// model: 2 layers x 4 heads, d_model 32, attention-only blocks
	// heads: roles pooled over 64 examples of induction (seed 1), at every position
	// layer head  role                           score entropy
	//     0    0  diffuse (best: offset k=10)     0.03    2.28
	//     0    1  previous-token                  0.73    0.48
	//     0    2  diffuse (best: self)            0.12    1.83
	//     0    3  diffuse (best: offset k=10)     0.04    2.26
	//     1    0  diffuse (best: previous-token)  0.33    1.21
	//     1    1  induction                       0.98    0.13
	//     1    2  self                            0.71    0.33
	//     1    3  induction                       1.00    0.11
}
