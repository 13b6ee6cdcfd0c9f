package report

import "github.com/attnscope/attnscope/open"

// build opens o.Checkpoint as inspect opens it and builds its report.
func build(o Options) (*Report, error) {
	textFlag := ""
	if o.Text != "" {
		textFlag = "-text"
	}
	op, err := open.Open(o.Checkpoint, open.Options{TextFlag: textFlag})
	if err != nil {
		return nil, err
	}
	return Build(Subject{Model: op.Model, Run: op.Run, Step: op.Step, Task: op.Task, Origin: op.Origin,
		Tokenizer: op.Tokenizer, TokenNames: open.TokenNames(op), Inputs: op.Inputs}, o)
}
