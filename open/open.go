package open

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/tokenizer"
)

// Options say what the user named besides the model.
type Options struct {
	// Data is the text file to draw a text model's windows from (-data), ""
	// for none: a lone checkpoint then opens with its vocabulary alone, a
	// run directory with the file its run recorded.
	Data string
	// Notices receives one line per file read and per note the user should
	// see (stderr); nil drops them.
	Notices io.Writer
	// Vocab is the meta.pkl of a nanoGPT character model (-vocab), "" for
	// the one beside its ckpt.pt, if any.
	Vocab string
	// TextFlag is the flag that gives text for the model's tokenizer to
	// read ("-text"), "" for none: the checkpoint of a toy task, which has
	// no tokenizer, is then refused naming it as soon as its header is
	// read, before its weights are (a model trained elsewhere, a text
	// model and a fine-tuned one always have a tokenizer).
	TextFlag string
	// Progress, when set, hears the bytes of a Hugging Face model's
	// weights read so far of their total as they load; nil: nothing.
	Progress func(done, total int64)
	// NoText says the view reads and shows no text (inspect -graph and
	// -dot): a Hugging Face directory then opens without reading its
	// tokenizer files (a tokenizer.json of 150k-260k tokens takes 60-260
	// ms to read); its tokens are ids (tokenizer.IDs), its BOS and EOS
	// config.json's.
	NoText bool
	// digests asks the readers of a model trained elsewhere for
	// Opened.Digests (ForFineTuning).
	digests bool
}

// Opened is a model opened from what the user named.
type Opened struct {
	Model *model.Model
	// Run is the run config of a model the lab trained (the checkpoint's,
	// a fine-tuning run's included): nil for a model trained elsewhere,
	// whose training settings no file here records.
	Run  *rundir.Config
	Step int
	// Checkpoint is the file read; RunDir the run directory it belongs to,
	// "" for a lone checkpoint.
	Checkpoint, RunDir string
	// Task is the model's task: with examples to draw, or for a text model
	// without a file its vocabulary alone (data.HasWindows is false).
	Task data.Task
	// DataFile is the text file the windows come from, "" when none was read.
	DataFile string
	// Origin names the kind of model trained elsewhere this is ("Hugging
	// Face GPT2LMHeadModel", "nanoGPT", "fine-tuned from nanoGPT"), whose
	// heads are read on repeated tokens of its tokenizer; "" for the lab's
	// own models of a task.
	Origin string
	// Files are the files a model trained elsewhere was read from (its
	// config, weights and tokenizer), TokenizerFiles those of them the
	// tokenizer came from (none for GPT-2's own): what a run fine-tuning
	// it records and copies.
	Files, TokenizerFiles []string
	// Tokenizer turns text into the model's ids: a model trained elsewhere
	// always has one (tokenizer.IDs when it came without tokenizer files), a
	// text model its characters; nil for the lab's toy tasks, whose tokens
	// are their labels.
	Tokenizer tokenizer.Tokenizer
	// Digests are the size and SHA-256 of the files of a model trained
	// elsewhere that its readers hashed as they loaded them, by path as in
	// Files (ForFineTuning asks for them).
	Digests map[string]safefile.Digest
	// Inputs are every file the opening read or may read (package
	// function Inputs, and each file read), which no output may replace
	// (safefile.CheckOutput).
	Inputs []string
	// EOS are every id that ends a text of a model trained elsewhere: the
	// tokenizer's EOS and each eos_token_id a Hugging Face config.json lists
	// (Llama 3's instruct models end a turn with any of three);
	// Tokenizer.EOS() is one of them. Empty when the tokenizer has none.
	EOS []int
}

// TrainedElsewhere reports whether the model is read as one trained
// elsewhere (Origin): by its tokenizer's repeated tokens, not a task's
// examples.
func (op *Opened) TrainedElsewhere() bool { return op.Origin != "" }

// Open opens the model at path, a run directory or a checkpoint file, by
// the rules of the package doc. Every error is one line naming the file.
func Open(path string, o Options) (*Opened, error) {
	op, err := openModel(path, o)
	if err != nil {
		return nil, err
	}
	op.Inputs = append(Inputs(path, o), op.Files...)
	op.Inputs = append(op.Inputs, nonEmpty(op.Checkpoint, op.DataFile)...)
	return op, nil
}

// The kinds of model trained elsewhere a path can hold (TrainedElsewhereKind).
const (
	HuggingFaceKind = "a Hugging Face model directory"
	NanoGPTKind     = "a nanoGPT checkpoint"
)

// TrainedElsewhereKind is the kind of model trained elsewhere path holds,
// told as Open tells it, from its names and first bytes, before anything
// is loaded; "" for anything else (the lab's runs and checkpoints): what
// refuses an option such a model has nothing for without reading its
// weights.
func TrainedElsewhereKind(path string) string {
	if _, ok := huggingFaceDir(path); ok {
		return HuggingFaceKind
	}
	if _, ok := nanoGPTCheckpoint(path); ok {
		return NanoGPTKind
	}
	return ""
}

// openModel is Open but for Opened.Inputs.
func openModel(path string, o Options) (*Opened, error) {
	if dir, ok := huggingFaceDir(path); ok {
		const kind = HuggingFaceKind
		if err := refuseData(o.Data, dir, kind); err != nil {
			return nil, err
		}
		if o.Vocab != "" {
			return nil, errors.Errorf("-vocab %s names a nanoGPT character model's meta.pkl; %s is %s, whose tokenizer is its own files", msg.Quote(o.Vocab), dir, kind)
		}
		return openHuggingFace(dir, o)
	}
	if ckpt, ok := nanoGPTCheckpoint(path); ok {
		if err := refuseData(o.Data, ckpt, NanoGPTKind); err != nil {
			return nil, err
		}
		return openNanoGPT(ckpt, o)
	}
	if o.Vocab != "" {
		return nil, errors.Errorf("-vocab %s names a nanoGPT character model's meta.pkl; %s is not a nanoGPT ckpt.pt", msg.Quote(o.Vocab), path)
	}
	ckpt, runDir, err := locate(path)
	if err != nil {
		return nil, err
	}
	if err := refuseText(path, ckpt, o.TextFlag); err != nil {
		return nil, err
	}
	ck, err := checkpoint.Load(ckpt)
	if err != nil {
		return nil, err
	}
	if !ck.Sealed {
		notef(o.Notices, "note: %s was written before checkpoints recorded a SHA-256 of their tensors, so damage to it cannot be detected", ckpt)
	}
	if ck.Config.FineTunes() {
		return openFineTuned(ck, ckpt, runDir, o)
	}
	op := &Opened{Model: ck.Model, Run: &ck.Config, Step: ck.Step, Checkpoint: ckpt, RunDir: runDir}
	if op.Task, op.DataFile, err = taskOf(ck.Config.Task, ckpt, runDir, o); err != nil {
		return nil, err
	}
	if op.DataFile != "" && op.Task.Vocab() != ck.Config.Model.Vocab {
		return nil, errors.Errorf("%s: the text has %d distinct characters, the model a vocabulary of %d", op.DataFile, op.Task.Vocab(), ck.Config.Model.Vocab)
	}
	if data.IsText(op.Task) {
		op.Tokenizer, err = characters(op.Task)
	}
	return op, errors.Wrapf(err, "checkpoint %s", ckpt)
}

// refuseText refuses text (the flag named, "" for none) for the lab's
// checkpoint ckpt (named path by the user) of a toy task, whose tokens are
// its labels: from the header alone (checkpoint.Peek), so a large
// checkpoint is not read to say so.
func refuseText(path, ckpt, flag string) error {
	if flag == "" {
		return nil
	}
	cfg, _, err := checkpoint.Peek(ckpt)
	if err != nil {
		return err
	}
	if cfg.FineTunes() || cfg.Task.Name == data.Text {
		return nil
	}
	return errors.Errorf("%s: %s's task (%s) has no tokenizer; give its tokens with -tokens", flag, path, cfg.Task.Name)
}

// refuseData refuses a text file (-data) for the model at path, of the
// kind named: a model trained elsewhere, which reads no text file.
func refuseData(data, path, kind string) error {
	if data == "" {
		return nil
	}
	return errors.Errorf("-data %s: %s is %s, which reads no text file (-data names the text a lab text model was trained on)", msg.Quote(data), path, kind)
}

// characters is the tokenizer of a character-level text task: its
// characters, so that -text and -prompt read text as the model does.
func characters(task data.Task) (tokenizer.Tokenizer, error) {
	itos := make([]string, task.Vocab())
	for id := range itos {
		r, _ := data.Char(task, id)
		itos[id] = string(r)
	}
	return tokenizer.NewChars(itos)
}

// taskOf is the task a model trained on cfg opens with: see the package
// doc for which text file, if any, is read.
func taskOf(cfg data.TaskConfig, ckpt, runDir string, o Options) (data.Task, string, error) {
	if cfg.Name != data.Text {
		if o.Data != "" {
			return nil, "", errors.Errorf("-data %s: the model's task is %s, which reads no file", msg.Quote(o.Data), cfg.Name)
		}
		task, err := data.New(cfg)
		return task, "", errors.Wrapf(err, "checkpoint %s", ckpt)
	}
	switch {
	case o.Data != "":
		var err error
		if cfg, err = data.Relocate(cfg, o.Data); err != nil {
			return nil, "", err
		}
	case runDir != "":
		run, err := rundir.RunTask(runDir)
		if err != nil {
			return nil, "", err
		}
		if err := sameTask(cfg, run); err != nil {
			return nil, "", errors.Wrapf(err, "%s does not belong to the run in %s", ckpt, runDir)
		}
		cfg.File = run.File
	default:
		task, err := data.Vocabulary(cfg)
		if err != nil {
			return nil, "", errors.Errorf("checkpoint %s: %v; name the text it was trained on with -data FILE", ckpt, err)
		}
		return task, "", nil
	}
	file := data.TextLocation(cfg)
	if !cfg.File.Recorded() {
		notef(o.Notices, "note: %s records no SHA-256 of its text file, so the content of %s cannot be checked", ckpt, msg.Clean(file))
	}
	task, err := data.New(cfg)
	if err != nil {
		if o.Data == "" && !cfg.File.Recorded() && !filepath.IsAbs(cfg.Path) && errors.Is(err, os.ErrNotExist) {
			err = errors.Wrap(err, "task.path is relative to the directory train ran in; name the file with -data")
		}
		return nil, "", err
	}
	notef(o.Notices, "reading windows of %s", msg.Clean(file))
	return task, file, nil
}

// sameTask refuses a checkpoint whose task is not its run's: the same task,
// length and text, the text's record aside when the checkpoint predates it.
func sameTask(ckpt, run data.TaskConfig) error {
	if !ckpt.File.Recorded() {
		ckpt.File = run.File
	}
	ckpt.Chars, run.Chars = "", ""
	if ckpt != run {
		return errors.Errorf("its task (%s, task.path %s) is not the run's (%s, task.path %s)",
			ckpt.Name, msg.Quote(ckpt.Path), run.Name, msg.Quote(run.Path))
	}
	return nil
}

func notef(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// locate turns what the user named into the checkpoint to read and the run
// directory it belongs to ("" for a lone checkpoint).
func locate(path string) (ckpt, runDir string, err error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", "", errors.Errorf("checkpoint %s: no such file; train first (%s), or look at a trained model right away: -checkpoint %s",
			path, trainHint(path), ShippedCheckpoint)
	case err != nil:
		return "", "", errors.Wrapf(err, "checkpoint %s", path)
	case info.IsDir():
		ckpt = filepath.Join(path, rundir.CheckpointFile)
		if _, err := os.Stat(ckpt); err != nil {
			if _, err := os.Stat(filepath.Join(path, rundir.ConfigFile)); err == nil {
				return "", "", errors.Errorf("run directory %s holds no %s yet: train saves one every train.checkpoint_every steps and when it stops", path, rundir.CheckpointFile)
			}
			return "", "", errors.Errorf("checkpoint %s: is a directory, not a run directory (it holds no %s)", path, rundir.CheckpointFile)
		}
		return ckpt, path, nil
	case info.Mode().IsRegular():
		if err := checkNotText(path); err != nil {
			return "", "", err
		}
	}
	return path, ownRun(path), nil
}

// ownRun is the run directory that holds the checkpoint at path, or "":
// train's own checkpoint files beside the run's config.
func ownRun(path string) string {
	name, dir := filepath.Base(path), filepath.Dir(path)
	if name != rundir.CheckpointFile && name != rundir.BestFile {
		return ""
	}
	if info, err := os.Stat(filepath.Join(dir, rundir.ConfigFile)); err != nil || !info.Mode().IsRegular() {
		return ""
	}
	return dir
}

// ShippedCheckpoint is the trained model the repository ships, for a
// first look before any training (relative to the repository root).
const ShippedCheckpoint = "testdata/induction/checkpoint.safetensors"

// trainHint is the command that writes a missing checkpoint: the config
// named like its run directory when there is one (runs/copy: configs/copy.yaml).
func trainHint(path string) string {
	name := filepath.Base(filepath.Dir(path))
	if filepath.Ext(path) == "" {
		name = filepath.Base(path)
	}
	config := filepath.Join("configs", name+".yaml")
	if _, err := os.Stat(config); err == nil {
		return "go run ./cmd/train -config " + config
	}
	return "go run ./cmd/train -config configs/copy.yaml writes runs/copy"
}

// checkNotText refuses a text file given as a checkpoint (a run config, a
// log) before the safetensors reader reads its first bytes as a header
// length.
func checkNotText(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // the checkpoint reader reports it
	}
	defer f.Close()
	head := make([]byte, 8)
	n, _ := io.ReadFull(f, head)
	for _, c := range head[:n] {
		if c < 0x09 || c > 0x7e {
			return nil // binary: the checkpoint reader checks it
		}
	}
	if n == 0 {
		return nil
	}
	if ext := filepath.Ext(path); ext == ".yaml" || ext == ".yml" {
		return errors.Errorf("checkpoint %s: is a run config, not a checkpoint; train from it (go run ./cmd/train -config %s) and inspect the run's %s", path, path, rundir.CheckpointFile)
	}
	return errors.Errorf("checkpoint %s: is a text file, not a checkpoint (a .safetensors file written by train, such as %s)", path, ShippedCheckpoint)
}

// TokenNames are the names -tokens accepts besides ids: a toy task's
// non-numeric labels ("SEP"), what inspect prints; a character-level
// model's characters (the lab's text models, a nanoGPT character model),
// by their labels; for another model with a tokenizer its special tokens
// ("<|endoftext|>"), whose text is not what -text would encode.
func TokenNames(op *Opened) cli.TokenNames {
	names := map[string]int{}
	switch {
	case op.Tokenizer != nil && tokenizer.IsChars(op.Tokenizer):
		for id := range op.Tokenizer.Size() {
			names[op.Task.Label(id)] = id
		}
		return cli.TokenNames{Names: names, Characters: true}
	case op.Tokenizer != nil:
		for _, id := range specialTokens(op) {
			names[string(op.Tokenizer.Token(id))] = id
		}
		return cli.TokenNames{Names: names}
	}
	for id := range op.Task.Vocab() {
		if l := op.Task.Label(id); l != strconv.Itoa(id) {
			names[l] = id
		}
	}
	return cli.TokenNames{Names: names}
}

// UsePath puts the model on the attention path a -path flag names; ""
// keeps the checkpoint's own (its config's model.attention).
func (op *Opened) UsePath(flagValue string) error {
	if flagValue == "" {
		return nil
	}
	p, err := layers.ParsePath(flagValue)
	if err != nil {
		return errors.Errorf("-path %s: want %s or %s", msg.Quote(flagValue), layers.Fused, layers.Gorgonia)
	}
	op.Model.Config.Attention = string(p)
	return nil
}

// specialTokens are the ids of a model trained elsewhere that are named
// rather than typed: its beginning of text and every end-of-text id (Llama
// 3's <|eot_id|> beside <|end_of_text|>).
func specialTokens(op *Opened) []int {
	ids := slices.Clone(op.EOS)
	for _, id := range []int{op.Tokenizer.BOS(), op.Tokenizer.EOS()} {
		if id >= 0 && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}
