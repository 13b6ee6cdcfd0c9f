// Package htmlview writes the one-file interactive report of a model that
// `inspect -html` produces: the model's config, a grid of every layer x head
// as a thumbnail heatmap labelled with its role (and with the key-value
// head it reads when query heads share them) that fits the page's width, a
// large view of the chosen
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
//     holding Data. Its "inspect" member is the `inspect -json` object (the
//     first example and the head roles) but for its attention, which Maps
//     carries for every head; Data.Examples follow it in the selector.
//   - Attention travels as one string a head (EncodeMap: the causal lower
//     triangle row by row, little-endian float32, base64), the numbers
//     -json prints for a float32 model in a third of the bytes. The script
//     decodes a head only to draw it (mapOf keeps the last few decoded), so
//     its work and memory follow the heads on screen, not the model's.
//   - The head grid's columns share the width (at most 132 px each): every
//     head is on screen without sideways scrolling (pinned at 144 heads and
//     1,400 px by a browser test). A cell is a canvas of the map at one
//     pixel a weight, scaled by CSS, drawn when an IntersectionObserver
//     sees it come into view and again only when the example changes. At
//     1,024 heads the page thus draws the few hundred cells near the
//     screen (pinned at 32 x 32 heads by a browser test), and the
//     composition tables (one per pair of layers, heads x heads cells) are
//     each built only when it comes near the screen. Past ThumbSide
//     positions a cell draws its head's thumbnail (EncodeThumb: the map
//     binned to at most 32 x 32 cells of a byte, 1 KB a head) instead of
//     decoding its map: at 1,024 heads and 256 tokens the page's script
//     went from 2.2 s to 1.6 s and its heap from 364 MB to 212 MB. What
//     stays is the maps' size, which every head carries so that any can
//     be opened (T(T+1)/2 weights a head: 180 MB for 1,024 heads at 256
//     tokens), and parsing it is most of that 1.6 s.
//   - The title, the roles' note and the blocks are the terminal view's
//     sentences (render's Inspect.Heading and RolesNote, -json's "blocks"
//     from model.Config.Blocks): the page and the terminal never describe
//     a model differently. A model trained elsewhere (Data.Source) has no
//     step on the page.
//   - Labels keep their real characters in the blob, which passes through
//     escape.JSON, so the page's bytes hold no control, C1 or format
//     character raw. The page shows each label as escape.Label writes it:
//     Write adds "shown_labels" and "shown_predicted" (the predictions'
//     labels, as the terminal's "predicted" row), one list per example (the
//     "inspect" one first, from Data.Labels, then Data.Examples), and the
//     script draws those. Write never decodes Data.Inspect: what it needs
//     of the first example comes as data (Labels, PredictedLabels).
//   - Attention is [layer][head][query][key] with causal zeros above the
//     diagonal; the page draws key > query as masked, not as weight 0, and
//     the keys outside the window (the model config's "window") as masked
//     on every layer but the global ones of a local/global model, which
//     the -json object's "layer_kinds" names; the page's layer labels,
//     thumbnails and opened head say "local" or "global" as the terminal's
//     panel titles do.
//   - Optional sections render only when their data is present: the graph
//     summary (Data.Graph, the graph that ran, titled with its GraphBatch
//     and GraphLength), the training curves (Data.Training), the head
//     roles through training (Training.Heads, from roles.jsonl) and the
//     ablation table beside the thumbnails (the -json object's "ablation",
//     from inspect -ablate).
//   - Write only renders; where the bytes go (atomically, never over an
//     input) is the caller's business.
package htmlview
