// Package report is what inspect shows, as a library: Build turns an
// opened model (Subject, what open.Open gives) and the options a user
// gives (Options) into a Report - the
// sequence shown and the model's pass on it, every head's role from one
// shared cached run, the circuit metrics, the ablation table and what the
// HTML page adds (held-out examples, the forward graph's summary, the
// run's curves). ReadRuns does the same for training runs (inspect -run),
// Graph and GraphView for the expression graph (inspect -graph).
//
//	op, err := open.Open("runs/copy", open.Options{})
//	...
//	s := report.Subject{Model: op.Model, Run: op.Run, Step: op.Step, Task: op.Task, Origin: op.Origin, Tokenizer: op.Tokenizer}
//	r, err := report.Build(s, report.Options{Checkpoint: "runs/copy", Layers: report.Every, Heads: report.Every, Samples: 64, Seed: 1})
//	...
//	render.WriteInspect(os.Stdout, r.Text(false), render.Plain, 100)
//
// Conventions:
//   - Build checks everything before a graph is built, each check in one
//     place: the options alone (Samples in [1, MaxSamples]), the run
//     directories the page plots (CheckRunPath, a run of another config or
//     shape of model), then against the opened model: the memory the
//     scoring batch and the tokens given would take (model.MaxMemory, the
//     one memory check), -layer and -head (Pick, read by ParsePick), what a
//     text model opened without its text cannot draw, the per-head work
//     asked for (refused past analysis.MaxPerHeadTime by its estimate:
//     checkPerHeadTime), and a length beyond a learned position table.
//     Errors are one line naming the flag a user set (-examples, -tokens,
//     ...), since the options are inspect's flags.
//   - The sequence shown is drawn from rand.NewPCG(Seed, ExampleStream), the
//     scoring examples from analysis.Examples (stream analysis.SamplesStream),
//     so changing Samples never changes the sequence shown.
//   - One plan per view, decided before anything runs (Report.plan): the
//     batch, the sequence shown as the first row of the scoring examples
//     when the lengths match, and the activations kept. Its one cached run
//     (analysis.RunWithCache) serves the sequence's pass, the head roles,
//     the mean heatmaps and every circuit metric that only reads a run;
//     the page adds one run of its held-out examples, and its graph
//     summary is the scoring run's (analysis.Cache.Graph), never a graph
//     built for the summary. Report.Passes records each forward, for the
//     tests that count them. Options.Activations (-save-activations) adds
//     a forward of its own on the sequence shown, batch 1, keeping those
//     activations for WriteActivations; the names are resolved and the
//     file's memory checked with the other options.
//   - A model trained elsewhere has no run (Subject.Run is nil): the
//     views ask what they need, never where it comes from. examplesOf says
//     once where the examples come from (a lab run's task, or the text
//     given or repeated tokens of a tokenizer), render names the model in
//     one place, and what needs a run (the training graph, the run's
//     seed) asks for Subject.Run.
//   - Views are data: Text, Figure and CircuitsView fill render's view
//     types, JSON and Page are the documents -json prints and the page
//     embeds, Runs.Text and Runs.Chart the -run views. report writes
//     nothing: render lays the views out, the caller writes them
//     (safefile.WriteOutput for files). Options.Layers and Heads pick what
//     the views draw, the heads the JSON document holds (Selection; the
//     page's document holds every head) and the heads the per-head work
//     (-ablate, -circuits' patching, copying and composition, -patch)
//     runs on (perHead, picked).
//   - Options.Patch (inspect -patch) is activation patching of the sequence
//     shown into a corrupted one: its kinds are a table (PatchKinds: the
//     activations the clean run keeps, the work estimated, the analysis
//     run), a new kind joins it; its flags and their checks are here
//     (PatchFlags, CheckPatchFlags), so the command stays thin. Its run is
//     a forward of its own on the sequence shown, batch 1, plus one a
//     component; the patching table is in Text, Image and the JSON
//     documents.
//   - The JSON documents keep their shape: snake_case keys, names of things
//     (roles, heads) as values, attention [layer][head][query][key] and
//     logits [position][vocab] at float32 precision for a float32 model;
//     past MaxLogitValues logits a sequence carries each position's top
//     LogitsTopK and its log-sum-exp unless Options.AllLogits.
//   - Options.Progress hears each long phase of Build (the weights read,
//     the scoring run, each circuit stage, the heads ablated, the runs
//     patched) as counts;
//     report draws nothing of it (inspect's stderr line does).
//   - report opens no file of a model: the caller opens it (open.Open)
//     and hands Build what it read, so report depends on no model
//     format's reader. Imports run cmd -> (open | report);
//     report -> (analysis | rundir | render) -> model;
//     report fills render's types, and render imports nothing of it.
package report
