package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/open/hf"
	"github.com/attnscope/attnscope/open/nanogpt"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/tokenizer"
)

func main() { cli.Main("export", run) }

const usage = `usage: export MODEL -out DIR [-data FILE]

Writes a model train wrote (a run directory or a checkpoint) as a Hugging
Face GPT-2 directory that transformers' GPT2LMHeadModel.from_pretrained
(and so TransformerLens) reads: config.json, model.safetensors under
GPT-2's tensor names, and the tokenizer of a model fine-tuned from a GPT-2.
The model must have GPT-2's block (learned positions, LayerNorms, a GELU
MLP, biases, multi-head attention); another is refused naming what
differs. DIR must be new or empty; it appears whole or not at all.

flags:
`

// options are the parsed flags.
type options struct {
	checkpoint, out, data string
}

func run(args []string, stdout, stderr io.Writer) error {
	o, helped, err := parseFlags(args, stdout)
	if helped || err != nil {
		return err
	}
	op, err := openGPT2(o, stderr)
	if err != nil {
		return err
	}
	tok, err := tokenizerOf(op)
	if err != nil {
		return err
	}
	if err := checkOut(o.out, op.Inputs); err != nil { // again, against every file the opening read
		return err
	}
	if err := safefile.WriteDirAtomic(o.out, func(tmp string) error { return write(tmp, op, tok) }); err != nil {
		return err
	}
	if tok.note != "" {
		fmt.Fprintf(stderr, "note: %s\n", tok.note)
	}
	written := []string{hf.ConfigFile, hf.WeightsFile}
	for _, f := range tok.files {
		written = append(written, f.name)
	}
	c := op.Model.Config
	fmt.Fprintf(stdout, "wrote %s: %s (GPT2LMHeadModel: %s, %s, d_model %d, vocab %d, context %d; step %d)\n",
		o.out, strings.Join(written, ", "), msg.Count(c.Layers, "layer"), msg.Count(c.Heads, "head"), c.DModel, c.Vocab, c.Context, op.Step)
	return nil
}

// parseFlags parses args; helped is true when -h printed the usage.
func parseFlags(args []string, stdout io.Writer) (o options, helped bool, err error) {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.StringVar(&o.checkpoint, "checkpoint", "", "the model: a run directory or a checkpoint file written by train; or give it as the first argument")
	fs.StringVar(&o.out, "out", "", "the Hugging Face directory to write: new, or empty")
	fs.StringVar(&o.data, "data", "", "the text file a text model was trained on, when its run's recorded copy has moved (the run directory reads the one it recorded)")
	arg, helped, err := cli.ParseArgs(fs, args, usage, stdout, cli.Operand{Name: "model"})
	if helped || err != nil {
		return o, helped, err
	}
	if o.checkpoint, err = cli.FlagOrArg("checkpoint", o.checkpoint, arg); err != nil {
		return o, false, err
	}
	switch {
	case o.checkpoint == "":
		return o, false, errors.New("no model: give one, e.g. export runs/shakespeare -out hf/shakespeare")
	case o.out == "":
		return o, false, errors.New("no -out DIR: name the Hugging Face directory to write (new, or empty)")
	}
	return o, false, nil
}

// openGPT2 opens the model o names once the output directory is allowed,
// refusing one that is not a lab GPT-2: from the checkpoint's header when
// it can, else once opened.
func openGPT2(o options, notices io.Writer) (*open.Opened, error) {
	opts := open.Options{Data: o.data, Notices: notices}
	if err := checkOut(o.out, open.Inputs(o.checkpoint, opts)); err != nil {
		return nil, err
	}
	if err := refuseShape(o.checkpoint); err != nil {
		return nil, err
	}
	op, err := open.Open(o.checkpoint, opts)
	if err != nil {
		return nil, err
	}
	if op.Run == nil {
		return nil, errors.Errorf("%s is a model trained elsewhere (%s); export writes the lab's own models (a run directory or a checkpoint train wrote)", o.checkpoint, op.Origin)
	}
	if err := hf.GPT2Shaped(op.Model.Config); err != nil {
		return nil, errors.Wrapf(err, "%s is not a GPT-2", o.checkpoint)
	}
	return op, nil
}

// write puts op's model and the tokenizer files of tok in the directory
// dir.
func write(dir string, op *open.Opened, tok exported) error {
	if err := hf.SaveGPT2(dir, op.Model, &tok.specials); err != nil {
		return err
	}
	for _, f := range tok.files {
		err := safefile.WriteFileAtomic(filepath.Join(dir, f.name), func(w io.Writer) error {
			_, err := w.Write(f.data)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkOut refuses out as the directory to write: it must be new or empty
// (safefile.CheckNewDir), and neither it nor a file written in it an input
// (safefile.CheckOutput: the files opening the model reads or may read).
func checkOut(out string, inputs []string) error {
	if err := safefile.CheckNewDir(out); err != nil {
		return err
	}
	if _, err := os.Lstat(out); errors.Is(err, os.ErrNotExist) {
		if err := safefile.CheckOutput(out, inputs, rundir.RefuseRunFile); err != nil {
			return err
		}
	}
	for _, name := range []string{hf.ConfigFile, hf.WeightsFile, "tokenizer.json", "vocab.json", "merges.txt"} {
		if err := safefile.CheckOutput(filepath.Join(out, name), inputs, rundir.RefuseRunFile); err != nil {
			return err
		}
	}
	return nil
}

// refuseShape refuses a lab checkpoint that is not a GPT-2 from its header
// alone (checkpoint.Peek), before its weights are read. What is not
// a lab checkpoint, or does not peek, is left to open.Open, whose errors
// name the fault.
func refuseShape(path string) error {
	ckpt := path
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		ckpt = filepath.Join(path, rundir.CheckpointFile)
	}
	cfg, _, err := checkpoint.Peek(ckpt)
	if err != nil {
		return nil
	}
	return errors.Wrapf(hf.GPT2Shaped(cfg.Model), "%s is not a GPT-2", path)
}

// exported is the tokenizer written beside the weights: its files, the
// special ids config.json names, and a note saying what is not written
// and why ("" when nothing is missing).
type exported struct {
	files    []file
	specials hf.Specials
	note     string
}

type file struct {
	name string
	data []byte
}

// maxTokenizerFile bounds a tokenizer file copied from a run: package
// tokenizer reads none larger.
const maxTokenizerFile = 64 << 20

// tokenizerOf is what of op's tokenizer a Hugging Face directory can hold.
// Hugging Face has files for the tokenizers of GPT-2's family only: a
// model fine-tuned from one gets its tokenizer's files (the run's checked
// copies, or GPT-2's own); a character model, a toy task's and a lone
// checkpoint whose tokenizer stayed in its run get none, said in the note.
func tokenizerOf(op *open.Opened) (exported, error) {
	none := exported{specials: hf.Specials{BOS: -1}}
	init := op.Run.Init
	switch {
	case op.Tokenizer == nil:
		none.note = fmt.Sprintf("%s (task %s) has no tokenizer: its tokens are the task's ids 0 to %d, as inspect labels them; no tokenizer file is written",
			op.Checkpoint, op.Run.Task.Name, op.Model.Config.Vocab-1)
		return none, nil
	case !op.Run.FineTunes():
		none.note = fmt.Sprintf("%s reads characters (%d of them), which Hugging Face has no tokenizer file for; none is written: id i is the i-th character of task.chars in the checkpoint's config (python/attnscope_torch.py's load returns it)",
			op.Checkpoint, op.Tokenizer.Size())
		return none, nil
	case len(init.Tokenizer) == 0:
		vocab, merges := tokenizer.GPT2Files()
		return exported{files: []file{{"vocab.json", vocab}, {"merges.txt", merges}}, specials: specialsOf(op)}, nil
	case init.Tokenizer[0] == nanogpt.MetaFile:
		none.note = fmt.Sprintf("%s reads the characters of the meta.pkl of %s, which Hugging Face has no tokenizer file for; none is written", op.Checkpoint, msg.Clean(init.Path))
		return none, nil
	case op.RunDir == "":
		none.note = fmt.Sprintf("%s is a lone checkpoint: its tokenizer is in the run directory that wrote it (%s), so none is written", op.Checkpoint, initfrom.CopyName(init.Tokenizer[0]))
		return none, nil
	}
	out := exported{specials: specialsOf(op)}
	for _, name := range init.Tokenizer {
		data, err := readCopy(op.RunDir, init, name)
		if err != nil {
			return exported{}, err
		}
		out.files = append(out.files, file{name, data})
	}
	return out, nil
}

// readCopy reads the run's copy of the tokenizer file name, checked
// against the run's record on the bytes read.
func readCopy(dir string, init initfrom.Record, name string) ([]byte, error) {
	f, err := init.OpenCopy(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := f.ReadLimit(maxTokenizerFile, "a tokenizer file may hold")
	if err != nil {
		return nil, err
	}
	return data, init.CheckCopy(name, f)
}

// specialsOf are the special ids of op's tokenizer, for config.json.
func specialsOf(op *open.Opened) hf.Specials {
	return hf.Specials{BOS: op.Tokenizer.BOS(), EOS: op.EOS}
}
