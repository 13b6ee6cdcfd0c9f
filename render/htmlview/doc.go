// Package htmlview writes the one-file interactive report of a model that
// `inspect -html` produces: the model's config, a grid of every layer x head
// as a thumbnail heatmap labelled with its role (and with the key-value
// head it reads when query heads share them), a large view of the chosen
// head with token axes, a hover tooltip and a colour scale, a head view with
// lines from each query to its keys, an example selector with predictions
// against targets, and the training curves and head roles through training
// of the run.
//
// Conventions:
//   - The page is self-contained: its style, script and data are inline and
//     it loads nothing (no http://, https:// or protocol-relative URL), so a
//     double click opens it offline. Heatmaps and charts are hand-written
//     canvas and SVG; no library is vendored.
//   - The data is one JSON blob, <script id="data" type="application/json">,
//     holding Data. Its "inspect" member is the `inspect -json` object
//     verbatim (the first example and the head roles), so the page and -json
//     carry the same numbers. Data.Examples follow it in the selector.
//   - Labels keep their real characters in the blob, which passes through
//     escape.JSON, so the page's bytes hold no control, C1 or format
//     character raw. The page shows each label as escape.Label writes it:
//     Write adds "shown_labels", one list per example (the "inspect" one
//     first, then Data.Examples), and the script draws those.
//   - Attention is [layer][head][query][key] with causal zeros above the
//     diagonal; the page draws key > query as masked, not as weight 0.
//   - Optional sections render only when their data is present: the graph
//     summary (Data.Graph), the training curves (Data.Training), the head
//     roles through training (Training.Heads, from roles.jsonl) and the
//     ablation table beside the thumbnails (the -json object's "ablation",
//     from inspect -ablate).
//   - Write only renders; where the bytes go (atomically, never over an
//     input) is the caller's business.
package htmlview
