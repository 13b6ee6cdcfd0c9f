// Command inspect shows what every attention head of a trained checkpoint
// does: heatmaps of its weights on one sequence, the model's predictions at
// each position, and each head's role (previous-token, self, first-token,
// separator, offset k, duplicate-token, induction, smallest-remaining,
// next-larger or diffuse) with its score.
//
//	inspect runs/copy [-tokens "3 1 4 1 16 3 1 4"]
//	        [-layer LIST] [-head LIST] [-json] [-png FILE] [-html FILE [-run DIR]]
//	        [-color auto|always|never]
//	        [-examples N] [-seed S] [-all-rows] [-path fused|gorgonia]
//	        [-save-activations FILE.safetensors -activations NAMES]
//	        [-patch KIND -corrupt-tokens IDS [-answer T -wrong T] [-metric M]]
//	inspect MODEL -graph [-dot FILE] [-training-graph] [-path fused|gorgonia]
//	inspect MODEL -corpus FILE [-windows N] [-window-length T] [-seed S] [-json]
//	inspect -run DIR [-json] [-png FILE]
//
// The model is the first argument or -checkpoint (a run directory, a
// checkpoint file, a Hugging Face directory or a nanoGPT ckpt.pt); flags
// may stand before or after it.
//
// The command parses flags and checks how they combine, and opens the
// model (package open); package report computes what it shows from the
// opened model (Build, ReadRuns, Graph), package render lays
// each view out, and the command writes them (safefile.WriteOutput for
// files).
//
// Conventions:
//   - -patch KIND is TransformerLens's activation patching from the sequence
//     shown into -corrupt-text or -corrupt-tokens, or its figures estimated
//     by attribution patching (attribution-z and kin) (report.PatchKinds, a
//     table a new kind joins; its flags and their checks are report's).
//   - -corpus scores every head over -windows windows of a text, their starts
//     drawn from rand.NewPCG(seed, analysis.CorpusStream) (analysis.CorpusHeads,
//     TransformerLens's head detector's scores); it combines only with the
//     flags that say how (corpusFlags).
//   - The task comes from the checkpoint's run config ("task" member), the
//     model from its tensors; nothing else is read.
//   - Without -tokens the sequence shown is one example of the task drawn from
//     rand.NewPCG(seed, analysis.ShownStream), a stream in inspect's own
//     range (analysis.InspectStreams) that no training batch uses. -tokens takes ids (#N always) or the names
//     inspect prints ("SEP", any case; a text model's characters, exactly:
//     cli.ParseTokens); -text takes text in the model's tokenizer, a text
//     model's characters included. With -tokens the target at position t is token t+1
//     and a position is scored where the task would score it; the last
//     position has no target. The text view says so when no position is
//     scored, and notes an input whose SEP is not where the task puts it.
//   - -mean draws each head's weights averaged over the -examples examples
//     instead of on the one sequence; its axes are positions (SEP where
//     every example has it) and the PNG then shows no predictions.
//   - Head roles are pooled over -examples examples drawn from
//     rand.NewPCG(seed, analysis.SamplesStream), at the query positions the task scores (all
//     positions with -all-rows, and always for induction, whose
//     previous-token head works at unscored positions); see package heads
//     for the scores. They
//     describe the head on the task, not on the one sequence shown.
//   - Colour: -color never or auto with NO_COLOR set or stdout not a
//     terminal gives the plain ramp; otherwise 24-bit cells when COLORTERM is
//     truecolor or 24bit, else 256-colour cells. Heads of a layer sit side by
//     side in rows of as many as fit the terminal's width (else COLUMNS,
//     else 80), and prose lines wrap to it; a heatmap too wide even with
//     two-character cells is binned to fit (render.Panel.Binned). Above
//     report.MaxHeadsShown heads the default view draws the grid of heads
//     and the report.StrongestShown heads of highest role score.
//   - -json prints one object and nothing else: tokens, labels, texts (each
//     token's raw text), targets (null where not scored), attention
//     [layer][head][query][key], logits [position][vocab], predictions
//     [position], heads [layer][head] {role, score, offset_k, scores
//     [{role, score}], entropy, entropy_norm, sequences}, and kv_head
//     [head], the key-value head each query head reads, when query heads
//     share them (grouped-query attention), and layer_kinds [layer], local
//     or global, for a local/global model (global_layers), whose text
//     view's heads' table and panel titles say the same; docs/json.md
//     lists every key.
//     It holds the heads -layer and -head select, and selection names
//     them. -layer and -head take a number, a list with ranges ("0,5-7")
//     or all (report.ParsePick); the per-head work (-ablate, -circuits'
//     patching) runs on the heads they pick, and is refused before it
//     starts when its estimate passes an hour (report's checkPerHeadTime). Values of a float32
//     model print at float32 precision. Labels hold the real characters;
//     every JSON inspect writes passes through escape.JSON, so a control or
//     format character travels as a \u escape, and every other view shows
//     it escaped (package render).
//   - -png writes the selected heads atomically as one image: a title
//     (checkpoint, task, step, or a model trained elsewhere as the terminal
//     names it; the flag that gave the tokens), wrapped to the image, then each layer's heads in rows of as many
//     as fit report.PNGMaxWidth pixels, each with position numbers, the scored rows,
//     SEP and the predictions marked.
//   - -html writes one self-contained interactive page atomically (see
//     package render/htmlview): its "inspect" data is the -json object of
//     every head (its attention as compact per-head maps beside it), then
//     the first min(-examples, 16) rows of the run's held-out set
//     (data.EvalSet of the run config's seed; fewer for a model whose
//     attention would make the page large), the forward graph's summary, and
//     the curves of metrics.jsonl from -run DIR or, when it has one, the
//     checkpoint's directory. It refuses a path that is the checkpoint, the
//     metrics it reads or not a regular file, before anything is computed.
//   - -save-activations writes the activations -activations names
//     (comma-separated, each the lab's name, TransformerLens's or a glob
//     of either), of a forward of its own on the sequence shown (batch 1),
//     as one safetensors file (report.WriteActivations): each under the
//     name asked, in TransformerLens's shape (batch first) and the model's
//     dtype, the tokens and their labels in its metadata. A name the model
//     does not have is refused, listing those it has, before the model
//     runs; the file follows the output rule, written atomically
//     (docs/transformerlens.md).
//   - -path runs the checkpoint on the fused or the gorgonia attention path
//     (default: its own model.attention); both give the same view. -graph
//     prints the expression graph instead of the heads (model.Graph.Summary:
//     op nodes in execution order, name, op, shape, parameters, totals;
//     -training-graph for the training graph of the run's batch, refused
//     for a model trained elsewhere, which has no run), -dot
//     writes Gorgonia's ToDot atomically, never over the checkpoint. They
//     take no other flag (it would be ignored).
//   - -run DIR without a model shows a training run (runlog.ReadLogs):
//     the training and held-out loss (one scale, 0 to the highest loss),
//     token accuracy and exact match (0 to 1), then for each head its
//     strongest role at the last evaluation with that role's score at every
//     evaluation of roles.jsonl and the step it first passed 0.5. Every
//     sparkline starts at the same column and spans the same steps (first
//     to last logged), as wide as COLUMNS allows. -json prints runlog.Logs;
//     -png draws the same curves as three stacked line charts (one line per
//     head, a guide at 0.5), never over the run's files. Other flags need
//     a model.
//   - Progress goes to stderr (internal/progress.Line, fed by
//     report.Options.Progress): on a terminal one line redrawn and
//     cleared before stdout is written, on a pipe or a file a plain line
//     at most every 10 s; a writer that is not a file (a test's buffer)
//     gets none. stdout is the same with or without it.
//   - Every bad input is reported as one line before any graph is built:
//     flags, -tokens or -text (not a number, not UTF-8, outside the
//     vocabulary, longer than the context: the error names the flag given),
//     a flag that does not apply to the model's kind (-data for a model
//     trained elsewhere, -vocab for all but a nanoGPT checkpoint), a
//     checkpoint that is missing or corrupt in any way, and a
//     -examples whose scoring batch would need more than model.MaxMemory by
//     train's estimate. Nothing is printed or written before that check.
package main
