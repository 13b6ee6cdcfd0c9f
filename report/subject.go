package report

import (
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/tokenizer"
)

// Subject is the opened model a view reads: what open.Open gives, as the
// values report uses. report opens no file itself (inspect opens, then
// builds), so it depends on no reader of a model format.
type Subject struct {
	Model *model.Model
	// Run is the run config of a model the lab trained; nil for a model
	// trained elsewhere, whose training settings no file here records.
	Run  *rundir.Config
	Step int
	// Task is the model's task: with examples to draw, or for a text model
	// opened without its text its vocabulary alone.
	Task data.Task
	// Origin names the kind of model trained elsewhere this is ("Hugging
	// Face GPT2LMHeadModel", "nanoGPT"); "" for the lab's own models.
	Origin string
	// Tokenizer turns -text into ids: nil for the lab's toy tasks.
	Tokenizer tokenizer.Tokenizer
	// TokenNames are the names -tokens accepts besides ids (open.TokenNames).
	TokenNames cli.TokenNames
	// Inputs are the files opening the model read or may read, which no
	// output may replace (open.Opened.Inputs).
	Inputs []string
}
