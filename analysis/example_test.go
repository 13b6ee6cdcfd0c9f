package analysis_test

import (
	"fmt"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/rundir"
)

// load is the committed induction run: its model, task and run config.
func load() (*model.Model, data.Task, rundir.Config) {
	op, err := open.Open("../testdata/induction", open.Options{})
	if err != nil {
		panic(err)
	}
	return op.Model, op.Task, *op.Run
}

// examples is one run of the model over 64 examples of its task drawn
// from seed 1, keeping what the analyses read.
func examples(m *model.Model, task data.Task) *analysis.Cache {
	b, err := analysis.Examples(task, 64, 1)
	if err != nil {
		panic(err)
	}
	c, err := analysis.RunWithCache(m, b, analysis.Circuit(m)...)
	if err != nil {
		panic(err)
	}
	return c
}

// The two heads of the induction circuit, named by their attention over 64
// examples of the task.
func ExampleScoreHeads() {
	m, task, _ := load()
	pool, err := analysis.ScoreHeads(examples(m, task), task, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("layer 0 head 1:", pool.Roles[0][1])
	fmt.Println("layer 1 head 3:", pool.Roles[1][3])
	// Output:
	// layer 0 head 1: previous-token (0.73)
	// layer 1 head 3: induction (1.00)
}

// Removing one head at a time on the run's held-out set: the two circuit
// heads cost the most.
func ExampleAblate() {
	m, task, run := load()
	pool, err := analysis.ScoreHeads(examples(m, task), task, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	table, err := analysis.Ablate(m, task, run.Train.EvalSize, run.Seed, ablation.Zero, nil, pool.Roles, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, row := range table.Rows[:2] {
		fmt.Printf("layer %d head %d %s: loss %+.2f\n", row.Layer, row.Head, row.Role, row.DeltaLoss)
	}
	// Output:
	// layer 0 head 1 previous-token (0.73): loss +8.33
	// layer 1 head 3 induction (1.00): loss +1.44
}

// One forward pass: the attention of every head and the predictions.
func ExampleForward() {
	m, task, _ := load()
	tokens, targets, scored := make([]int, task.SeqLen()), make([]int, task.SeqLen()), make([]float64, task.SeqLen())
	copy(tokens, []int{3, 7, 1, 9, 4, 3, 7, 1, 9})
	pass, err := analysis.Forward(m, tokens, targets, scored)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("attention", pass.Attention.Shape, "(layer, head, query, key), logits", pass.Logits.Shape)
	fmt.Println("after 3 7 1 9 4 3 7 1 the model predicts", pass.Predictions[7])
	// Output:
	// attention [2 4 24 24] (layer, head, query, key), logits [24 32]
	// after 3 7 1 9 4 3 7 1 the model predicts 9
}

// Where the answer appears: the residual stream read out through the LM
// head after the embeddings and after each block, on 64 induction examples.
func ExampleLogitLens() {
	m, task, _ := load()
	lens, err := analysis.LogitLens(examples(m, task))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range lens {
		fmt.Printf("depth %d: accuracy %.2f\n", l.Depth, l.Accuracy)
	}
	// Output:
	// depth 0: accuracy 0.03
	// depth 1: accuracy 0.04
	// depth 2: accuracy 1.00
}

// The in-context-learning score: the copy's predictions against the same
// predictions at the block's first occurrence.
func ExampleICL() {
	m, task, _ := load()
	icl, err := analysis.ICL(examples(m, task), task)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("late %.3f, early %.1f, score %.1f nats\n", icl.Late, icl.Early, icl.Score)
	// Output:
	// late 0.019, early 14.7, score -14.7 nats
}
