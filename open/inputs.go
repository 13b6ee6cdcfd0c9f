package open

import (
	"path/filepath"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/open/hf"
	"github.com/attnscope/attnscope/open/nanogpt"
	"github.com/attnscope/attnscope/rundir"
)

// Inputs are the files that opening path with o reads or may read, found
// without loading the model: what no output of a command may replace or
// create (safefile.CheckOutput), so that a command refuses such an output
// path before any work. Opened.Inputs adds the files the opening read.
//   - A Hugging Face directory: every name its readers look for, there or
//     not, and the shards its index names (hf.Inputs).
//   - A nanoGPT checkpoint: ckpt.pt and the meta.pkl beside it, there or not.
//   - The lab's checkpoint: it, and for one in a run directory the text
//     file the run's config records (the run's own files are run files,
//     which the commands' output rule guards by name: rundir.RefuseRunFile).
//   - The files -data and -vocab name.
func Inputs(path string, o Options) []string {
	in := nonEmpty(o.Data, o.Vocab)
	if dir, ok := huggingFaceDir(path); ok {
		return append(in, hf.Inputs(dir)...)
	}
	if ckpt, ok := nanoGPTCheckpoint(path); ok {
		return append(in, ckpt, filepath.Join(filepath.Dir(ckpt), nanogpt.MetaFile))
	}
	ckpt, runDir, err := locate(path)
	if err != nil {
		return append(in, path)
	}
	in = append(in, ckpt)
	if runDir != "" {
		in = append(in, runInputs(runDir)...)
	}
	return in
}

// runInputs are the files of the run in dir that the views read, besides
// its own files, which the rule for run files the commands give the output
// rule already guards (rundir.RefuseRunFile: every run file in a directory
// holding a run): the text file its config records.
func runInputs(dir string) []string {
	if task, err := rundir.RunTask(dir); err == nil && task.Name == data.Text {
		return []string{data.TextLocation(task)}
	}
	return nil
}

// nonEmpty is paths without the empty ones.
func nonEmpty(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
