package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// curve is one line of a run: its name, points, the scale shown, the
// chart it belongs on, and the task length of a train.eval_lengths
// evaluation (0 for the run's own).
type curve struct {
	name   string
	xs, ys []float64
	lo, hi float64
	kind   curveKind
	length int
}

// curveKind is what a curve measures, which decides its chart.
type curveKind int

const (
	lossCurve     curveKind = iota // nats, on the losses' shared scale
	accuracyCurve                  // a fraction, 0 to 1
	bitsCurve                      // a language model's held-out bits per character or token
)

// Curve names, in the order they are shown.
const (
	trainLossName = "train loss"
	evalLossName  = "held-out loss"
	tokenAccName  = "token accuracy"
	exactName     = "exact match"
)

// languageUnit is what a run's loss is per when it is a language model's:
// "character" for the text task on characters, "token" for text read
// through a pretrained model's tokenizer; "" for the toy tasks, whose exact
// match is what their curves show. A run without a readable config is
// taken for a toy task's.
func languageUnit(dir string) string {
	task, err := rundir.RunTask(dir)
	switch {
	case err != nil || task.Name != data.Text:
		return ""
	case task.Chars == "":
		return "token"
	}
	return "character"
}

// unitShort abbreviates a language unit for a sparkline's label, which
// has 26 columns.
var unitShort = map[string]string{"character": "char", "token": "token"}

// runCurves are the metrics curves: training and held-out loss on one scale
// from 0 to the highest loss, the accuracies from 0 to 1. A language
// model's (unit "character" or "token") show its held-out bits per unit
// instead of the exact match of a whole window, which is 0 throughout.
func runCurves(r *runlog.Logs, unit string) []curve {
	trainLoss := curve{name: trainLossName}
	evalLoss := curve{name: evalLossName}
	tokenAcc := curve{name: tokenAccName, hi: 1, kind: accuracyCurve}
	seqAcc := curve{name: exactName, hi: 1, kind: accuracyCurve}
	bits := curve{name: "held-out bits/" + unitShort[unit], kind: bitsCurve}
	for _, p := range r.Train {
		trainLoss.xs, trainLoss.ys = append(trainLoss.xs, float64(p.Step)), append(trainLoss.ys, p.Loss)
	}
	for _, p := range r.Eval {
		x := float64(p.Step)
		evalLoss.xs, evalLoss.ys = append(evalLoss.xs, x), append(evalLoss.ys, p.EvalLoss)
		tokenAcc.xs, tokenAcc.ys = append(tokenAcc.xs, x), append(tokenAcc.ys, p.TokenAcc)
		seqAcc.xs, seqAcc.ys = append(seqAcc.xs, x), append(seqAcc.ys, p.SeqAcc)
		bits.xs, bits.ys = append(bits.xs, x), append(bits.ys, p.EvalLoss/math.Ln2)
	}
	// The loss scale tops out at a round number above the highest loss, so a
	// flat curve shows at its height rather than as a full bar.
	top := roundUp(max(highest(trainLoss.ys), highest(evalLoss.ys)))
	trainLoss.hi, evalLoss.hi, bits.hi = top, top, roundUp(highest(bits.ys))
	all := []curve{trainLoss, evalLoss, tokenAcc, seqAcc}
	if unit != "" {
		all = []curve{trainLoss, evalLoss, bits, tokenAcc}
	}
	var out []curve
	for _, c := range all {
		if len(c.xs) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// lengthCurves are the held-out token accuracy and exact match at each of
// train.eval_lengths (metrics lines with an eval_length), shortest length
// first; a language model's show token accuracy alone.
func lengthCurves(r *runlog.Logs, unit string) []curve {
	var lengths []int
	for _, p := range r.AtLength {
		if !slices.Contains(lengths, p.EvalLength) {
			lengths = append(lengths, p.EvalLength)
		}
	}
	slices.Sort(lengths)
	var out []curve
	for _, l := range lengths {
		tokenAcc := curve{name: fmt.Sprintf("length %d %s", l, tokenAccName), hi: 1, kind: accuracyCurve, length: l}
		seqAcc := curve{name: fmt.Sprintf("length %d %s", l, exactName), hi: 1, kind: accuracyCurve, length: l}
		for _, p := range r.AtLength {
			if p.EvalLength == l {
				x := float64(p.Step)
				tokenAcc.xs, tokenAcc.ys = append(tokenAcc.xs, x), append(tokenAcc.ys, p.TokenAcc)
				seqAcc.xs, seqAcc.ys = append(seqAcc.xs, x), append(seqAcc.ys, p.SeqAcc)
			}
		}
		out = append(out, tokenAcc)
		if unit == "" {
			out = append(out, seqAcc)
		}
	}
	return out
}

// lengthsHeading introduces the curves at other lengths.
const lengthsHeading = "held-out accuracy (0-1) at each of train.eval_lengths (metrics lines with eval_length)"

// highest is the largest of ys, 0 for none.
func highest(ys []float64) float64 {
	top := 0.0
	for _, y := range ys {
		top = math.Max(top, y)
	}
	return top
}

// roundUp is the smallest of 1, 1.5, 2, 3, 4, 5, 6, 8 times a power of ten
// that is above v (v itself when it is not positive).
func roundUp(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return v
	}
	scale := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 3, 4, 5, 6, 8, 10} {
		if m*scale > v {
			return m * scale
		}
	}
	return 10 * scale
}
