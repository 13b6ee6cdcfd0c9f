package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/progress"
	"github.com/attnscope/attnscope/internal/strictyaml"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
	"github.com/attnscope/attnscope/train"
)

func main() { cli.Main("train", run) }

// sets collects repeated -set flags.
type sets []string

func (s *sets) String() string     { return strings.Join(*s, " ") }
func (s *sets) Set(v string) error { *s = append(*s, v); return nil }

const usage = `usage: train -config FILE [-run DIR] [-fresh] [-set key=value ...]
       train -resume DIR [-config FILE] [-set train.steps=N] [-data FILE]

Trains a model on a toy task and writes the run directory DIR (default
runs/<config name>): config.yaml, metrics.jsonl, roles.jsonl,
checkpoint.safetensors, best.safetensors and state-<step>.safetensors.
A directory that holds a run is never overwritten: -resume DIR continues it,
-fresh moves it aside to DIR.old-N and starts over.
Ctrl-C saves a checkpoint and exits 130; -resume DIR continues it bit for bit.
-resume DIR -set train.steps=N extends a run (finished or not) to N steps;
no other key may change on resume. -resume -run DIR is the same as -resume DIR.

flags:
`

// run parses args, trains, and prints progress and a summary to stdout.
// Errors are returned for main to print as one line.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	configPath := fs.String("config", "", "YAML run config (e.g. configs/copy.yaml)")
	runFlag := fs.String("run", "", "the run directory, new or empty unless -resume or -fresh (default runs/<config name>)")
	var resume resumeFlag
	fs.Var(&resume, "resume", "continue the run in the run directory (-resume DIR, or -resume -run DIR) from its latest checkpoint")
	fresh := fs.Bool("fresh", false, "start over in a run directory that holds a run, moving the old run aside to DIR.old-N (the first free N)")
	dataFile := fs.String("data", "", "with -resume: the text task's file where it is now, when it moved since the run started (its content must be what the run recorded)")
	var overrides sets
	fs.Var(&overrides, "set", "override a config key, e.g. -set model.heads=8 (repeatable)")
	cli.Rename(fs, "out", "run", stderr) // the run directory is -run in every command
	arg, helped, err := cli.ParseArgs(fs, args, usage, stdout, cli.Operand{Name: "run directory"}, strictyaml.Paths(rundir.Config{})...)
	if helped || err != nil {
		return err
	}
	out, err := runDirectory(fs, args, *runFlag, resume, arg)
	if err != nil {
		return err
	}
	resumeDir := ""
	if resume.on {
		if out == "" {
			return errors.New("-resume: which run? give its directory (-resume runs/copy)")
		}
		resumeDir, out = out, ""
	}
	if *fresh && resume.on {
		return errors.New("-fresh starts a new run and -resume continues one; give one of them")
	}
	if err := kernels.Check(); err != nil {
		return err
	}
	opener := &pretrainedOpener{notices: stderr}
	dir, cfg, err := resolve(*configPath, out, resumeDir, overrides, opener.open)
	if err != nil {
		return err
	}
	if *dataFile != "" && resumeDir == "" {
		return errors.New("-data names a moved text file of a run being resumed; a new run reads task.path (add -resume, or set task.path)")
	}
	if *fresh {
		aside, err := moveAside(dir)
		if err != nil {
			return err
		}
		if aside != "" {
			fmt.Fprintf(stdout, "-fresh: moved the run that was in %s to %s\n", dir, aside)
		}
	}

	// SIGHUP (a closed terminal or ssh session) stops the run like Ctrl-C:
	// with a checkpoint, not the loss of every step since the last one.
	// After the first signal the default handling returns, so a second
	// Ctrl-C ends the process at once (every file is written atomically).
	// A closed stdout (train ... | head) must not kill the run with SIGPIPE
	// before it saves: ignored, a write fails with EPIPE instead, which the
	// run reports at the end, as for a full disk (outputWriter).
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop, caught := cli.StopOn(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	output := &outputWriter{w: stdout}
	rep := newReporter(output, progress.IsTerminal(stdout), progress.DefaultWidth)
	if f, ok := stdout.(*os.File); ok && rep.terminal {
		rep.width = progress.Width(f)
		defer progress.WatchResize(f, rep.resize)()
	}
	rep.header = header(dir, *configPath, resumeDir != "", cfg, overrides)
	rep.tokenMetric = cfg.Task.Name == "induction" // its target is token accuracy (configs/induction.yaml)
	res, err := train.Run(ctx, cfg, train.Options{Dir: dir, Resume: resumeDir != "", Observer: rep.observe, Data: *dataFile, Notices: stderr, Probes: probes, Pretrained: opener.opened})
	rep.finish()
	if err != nil {
		return stopped(refusal(err, dir, *runFlag), caught)
	}
	summarize(output, res)
	if output.err != nil {
		return errors.Wrap(output.err, "writing to stdout")
	}
	if res.Interrupted {
		return stopped(nil, caught)
	}
	return nil
}

// refusal words a failed run's error for the user: how to go on from a
// directory that holds a run, and which flag named a foreign directory.
func refusal(err error, dir, runFlag string) error {
	if errors.Is(err, train.ErrRunExists) {
		return errors.Errorf("%s already holds a run: continue it with -resume %s, start over with -fresh (the old run moves to %s.old-N), or give another -run DIR", dir, dir, filepath.Clean(dir))
	}
	var foreign *rundir.ForeignError
	if errors.As(err, &foreign) {
		return errors.Errorf("%s: %s", outLabel(runFlag, dir), foreign.Problem())
	}
	return err
}

// stopped is how a run a signal stopped ends: *cli.Interrupted, with err's
// message if it failed, so that main exits 128 plus the signal's number; err
// itself when no signal came.
func stopped(err error, caught func() (syscall.Signal, bool)) error {
	sig, ok := caught()
	if !ok {
		return err
	}
	stop := &cli.Interrupted{Signal: sig}
	if err != nil {
		stop.Message = err.Error()
	}
	return stop
}

// probes are what a run records at every evaluation besides its metrics:
// the head roles and the circuit metrics (package analysis).
func probes(m *model.Model, task data.Task, cfg rundir.Config) ([]train.Probe, error) {
	made, err := analysis.Probes(m, task, cfg.Train.EvalSize, cfg.Seed)
	out := make([]train.Probe, len(made))
	for i, p := range made {
		out[i] = p
	}
	return out, err
}

// outputWriter remembers the first failed write, so that a run whose output
// went nowhere (a full disk, /dev/full, a closed terminal) still trains and
// saves to the end, then exits non-zero rather than 0.
type outputWriter struct {
	w   io.Writer
	err error
}

func (o *outputWriter) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	o.err = err
	return n, err
}

// pretrainedOpener opens the pretrained model a config's init_from names
// and keeps it, so that the run starts from the model the config was read
// with, read once.
type pretrainedOpener struct {
	notices io.Writer
	opened  *train.Pretrained
}

func (p *pretrainedOpener) open(initFrom string) (rundir.Pretrained, error) {
	var err error
	if p.opened, err = train.OpenPretrained(initFrom, p.notices); err != nil {
		return rundir.Pretrained{}, err
	}
	return p.opened.Config(), nil
}

// recordedPretrained is what a config given with -resume DIR decodes
// over: the pretrained model the run in dir recorded, which need no longer
// exist (the config must equal the saved one anyway); open for a run that
// fine-tunes none.
func recordedPretrained(dir string, open rundir.OpenPretrained) rundir.OpenPretrained {
	return func(initFrom string) (rundir.Pretrained, error) {
		saved, err := checkpoint.SavedConfig(dir)
		if err != nil || !saved.FineTunes() {
			return open(initFrom)
		}
		return rundir.Pretrained{Model: saved.Model, Record: saved.Init}, nil
	}
}

// resolve works out the run directory and the config from the flags (out:
// a new run's directory, resume: the run to continue); open opens the
// pretrained model of a config naming init_from.
func resolve(configPath, out, resume string, overrides []string, open rundir.OpenPretrained) (string, rundir.Config, error) {
	switch {
	case resume != "":
		if info, err := os.Stat(resume); err == nil && !info.IsDir() {
			return "", rundir.Config{}, errors.Errorf("-resume %s: is a file; -resume takes the run directory (-resume %s)", resume, filepath.Dir(resume))
		}
		if configPath == "" {
			cfg, err := checkpoint.SavedConfig(resume)
			if err != nil || len(overrides) == 0 {
				return resume, cfg, err
			}
			// -set applies over the saved config; train.Run then refuses any
			// change but a raised train.steps.
			yml, err := cfg.YAML()
			if err != nil {
				return "", rundir.Config{}, err
			}
			cfg, err = rundir.ParseRunConfig(filepath.Join(resume, rundir.ConfigFile), yml, overrides)
			return resume, cfg, err
		}
		cfg, err := rundir.LoadConfigFrom(configPath, overrides, recordedPretrained(resume, open))
		return resume, cfg, err
	case configPath == "":
		return "", rundir.Config{}, errors.New("missing -config (e.g. -config configs/copy.yaml; see -h)")
	}
	cfg, err := rundir.LoadConfigFrom(configPath, overrides, open)
	if err != nil {
		return "", rundir.Config{}, err
	}
	if out == "" {
		out, err = defaultDir(configPath)
	}
	return out, cfg, err
}

// defaultDir is the run directory named after the config file,
// runs/<base name without extension>. A name that is empty, "." or ".."
// would put the run in runs/ itself or beside it, among other files.
func defaultDir(configPath string) (string, error) {
	name := strings.TrimSuffix(filepath.Base(configPath), filepath.Ext(configPath))
	if name == "" || name == "." || name == ".." {
		return "", errors.Errorf("-config %s: the file's name without its extension (%s) cannot name the run directory; give one with -run DIR", configPath, msg.Quote(name))
	}
	return filepath.Join("runs", name), nil
}

// outLabel names the run directory in a refusal: by the -run flag that gave
// it, or as the default the config's name gave.
func outLabel(runFlag, dir string) string {
	if runFlag != "" {
		return "-run " + dir
	}
	return "run directory " + dir + " (named after the config; -run DIR gives another)"
}

// header is the line printed before the first step: what runs, where, the
// -set overrides applied, and on resume whether the run is being extended.
func header(dir, configPath string, resuming bool, cfg rundir.Config, overrides []string) string {
	var h string
	if resuming {
		h = fmt.Sprintf("resuming %s (task %s, %d steps)", dir, cfg.Task.Name, cfg.Train.Steps)
		if saved, err := checkpoint.SavedConfig(dir); err == nil && saved.Train.Steps < cfg.Train.Steps {
			h = fmt.Sprintf("resuming %s (task %s), extended from %d to %d steps", dir, cfg.Task.Name, saved.Train.Steps, cfg.Train.Steps)
			if cfg.Train.Schedule == "cosine" {
				h += fmt.Sprintf("\nschedule cosine: the rest of the decay is stretched to end at step %d", cfg.Train.Steps)
			}
		}
		if step, ok := checkpointStep(dir); ok {
			h += fmt.Sprintf("\nresuming from the checkpoint of step %d", step)
		} else {
			h += "\nno checkpoint yet, starting from step 1"
		}
	} else {
		h = fmt.Sprintf("training %s: task %s, %d steps, writing %s", describe(configPath), cfg.Task.Name, cfg.Train.Steps, dir)
	}
	if len(overrides) > 0 {
		h += "\nwith -set " + strings.Join(overrides, " -set ")
	}
	return h
}

// checkpointStep is the step of the run's checkpoint, read from its header
// alone, and whether there is one. train.Run checks the file in full.
func checkpointStep(dir string) (int, bool) {
	_, step, err := checkpoint.Peek(filepath.Join(dir, rundir.CheckpointFile))
	return step, err == nil
}

func describe(configPath string) string {
	if configPath == "" {
		return "the saved config"
	}
	return configPath
}

// probesTime is the summary's figure of the probes: their time, or that
// train.probes turned them off.
func probesTime(res *train.Result) string {
	if res.ProbesOff {
		return "off (train.probes: on runs them)"
	}
	return duration(res.RolesTime, 10*time.Millisecond).String()
}

// summarize prints what the run did and where its files are.
func summarize(w io.Writer, res *train.Result) {
	ran := res.Step - res.FirstStep + 1
	secs := res.Elapsed.Seconds()
	switch {
	case res.Interrupted && ran > 0:
		// The command on a line of its own: it fits 80 columns and copies whole.
		fmt.Fprintf(w, "interrupted at step %d/%d; checkpoint saved. Continue with:\n  %s -resume %s\n", res.Step, res.Steps, selfCommand(), res.Dir)
	case res.Interrupted:
		fmt.Fprintf(w, "interrupted before step %d; nothing new to save. Continue with:\n  %s -resume %s\n", res.FirstStep, selfCommand(), res.Dir)
	case ran <= 0:
		fmt.Fprintf(w, "the run in %s was already complete (step %d/%d)\n", res.Dir, res.Step, res.Steps)
	}
	if ran > 0 {
		rate := 0.0
		if secs > 0 {
			rate = float64(ran) / secs
		}
		fmt.Fprintf(w, "steps %d-%d of %d in %s (%.1f steps/s)\n", res.FirstStep, res.Step, res.Steps, duration(res.Elapsed, 100*time.Millisecond), rate)
		if secs > 0 {
			fmt.Fprintf(w, "of which evaluation %s, head roles %s, saving %s (%.1f%% together)\n", duration(res.EvalTime, 10*time.Millisecond),
				probesTime(res), duration(res.SaveTime, 10*time.Millisecond), 100*(res.EvalTime+res.RolesTime+res.SaveTime).Seconds()/secs)
		}
	}
	if e := res.LastEval; e != nil {
		// Two lines, so that each fits in 80 columns.
		fmt.Fprintf(w, "eval at step %d: %s\n", e.Step, evalFigures(e))
		for _, at := range res.LastAtLength {
			fmt.Fprintf(w, "  at length %d: %s\n", at.EvalLength, evalFigures(&at))
		}
		fmt.Fprintf(w, "best eval_loss %.4f at step %d (best.safetensors)\n", res.BestLoss, res.BestStep)
	}
	// A fine-tuning run's copies of the pretrained tokenizer follow its
	// config: the run opens with them when the pretrained model is gone.
	names := []string{rundir.ConfigFile}
	for _, name := range initfrom.TokenizerNames {
		names = append(names, initfrom.CopyName(name))
	}
	var files []string
	for _, f := range append(names, runlog.MetricsFile, runlog.RolesFile, runlog.CircuitsFile, rundir.CheckpointFile, rundir.BestFile) {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err == nil {
			files = append(files, f)
		}
	}
	states, _ := filepath.Glob(filepath.Join(res.Dir, "state-*.safetensors"))
	for _, s := range states {
		files = append(files, filepath.Base(s)) // the optimizer state of the checkpoint, for -resume
	}
	// The directory on a line of its own, and the files wrapped, keep the
	// summary within 80 columns.
	fmt.Fprintf(w, "run directory: %s\n", res.Dir)
	fmt.Fprint(w, wrapFiles(files, 80))
}

// wrapFiles lists files after "files: ", each line at most width columns
// (a name longer than a line has one to itself), continuation lines
// indented under the first name.
func wrapFiles(files []string, width int) string {
	const prefix, indent = "files: ", "       "
	var b strings.Builder
	line := prefix
	for i, f := range files {
		if i > 0 && len(line)+1+len(f) > width {
			b.WriteString(line + "\n")
			line = indent
		} else if i > 0 {
			line += " "
		}
		line += f
	}
	b.WriteString(line + "\n")
	return b.String()
}

// duration rounds d to unit, or to the millisecond under a second, so that
// a short run does not read "in 0s".
func duration(d, unit time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(unit)
}

// selfCommand is how the user runs this command again: "go run ./cmd/train"
// from go run (whose binary lives in a temporary go-build directory), else
// the path of the binary as it was started.
func selfCommand() string {
	if strings.Contains(os.Args[0], "go-build") {
		return "go run ./cmd/train"
	}
	return os.Args[0]
}
