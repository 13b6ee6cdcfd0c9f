"use strict";
// The page's whole behaviour: it reads the JSON blob and draws every view
// from it; nothing is fetched.
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const I = D.inspect;
  const examples = [Object.assign({source: "the sequence inspect shows", maps: D.maps, thumbs: D.thumbs}, I)].concat(D.examples || []);
  // Labels are shown as Go escaped them (shown_labels, one list per
  // example): a control or bidi character of a token reads \u202e, and the
  // real labels stay for comparing ("SEP").
  examples.forEach((ex, i) => { ex.shown = D.shown_labels[i]; ex.shownPredicted = (D.shown_predicted || [])[i]; });
  const layers = D.maps.length, headsPerLayer = D.maps[0].length;
  const state = {ex: 0, layer: 0, head: 0};

  // ---- small helpers ----
  const $ = (id) => document.getElementById(id);
  // The SVG namespace, taken from an inline <svg> so the page holds no URL.
  const SVG = $("large").namespaceURI;
  function el(tag, attrs, parent, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function sv(tag, attrs, parent, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  const fmt3 = (w) => Number(w).toFixed(3);
  const fmt2 = (w) => Number(w).toFixed(2);

  // The colour scale of the terminal and PNG views (render.Color: the
  // inferno map, black = 0, pale yellow = 1), interpolated in RGB between
  // the same five stops, so a weight looks the same in every view and a zero
  // is far from the masked grey.
  const STOPS = [[0, 0, 4], [87, 16, 110], [188, 55, 84], [249, 142, 9], [252, 255, 164]];
  function rgb(w) {
    const x = Math.min(1, Math.max(0, w)) * (STOPS.length - 1);
    const i = Math.min(STOPS.length - 2, Math.floor(x)), f = x - i;
    return STOPS[i].map((v, k) => Math.round(v + (STOPS[i + 1][k] - v) * f));
  }
  const color = (w) => "rgb(" + rgb(w).join(",") + ")";
  const MASKED = [0xec, 0xee, 0xf2];
  // kindOf is "local" or "global" for layer l of a local/global model
  // (-json's layer_kinds), "" when every layer is alike.
  const kindOf = (l) => (I.layer_kinds ? I.layer_kinds[l] : "");
  // isMasked: key k is hidden from query q of layer l (after it, or outside
  // the window, which a global layer of a local/global model has not).
  const isMasked = (l, q, k) => k > q || (D.model.window > 0 && kindOf(l) !== "global" && k <= q - D.model.window);
  // The attention travels as one string a head (htmlview.EncodeMap): the
  // causal lower triangle row by row, little-endian float32, base64.
  // decodeMap reads one into [query][key], zero above the diagonal. A
  // thumbnail decodes its head as it draws it; the large view and the head
  // view read the head open through mapOf, which keeps the last few
  // decoded. Only the heads drawn are ever decoded.
  function decodeMap(s, T) {
    const bin = atob(s), bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const f = new DataView(bytes.buffer), rows = [];
    let o = 0;
    for (let q = 0; q < T; q++) {
      const row = new Array(T).fill(0);
      for (let k = 0; k <= q; k++, o += 4) row[k] = f.getFloat32(o, true);
      rows.push(row);
    }
    return rows;
  }
  const decoded = new Map(), KEEP_DECODED = 8;
  function mapOf(ex, l, h) {
    const key = examples.indexOf(ex) + "/" + l + "/" + h;
    if (!decoded.has(key)) {
      if (decoded.size >= KEEP_DECODED) decoded.delete(decoded.keys().next().value);
      decoded.set(key, decodeMap(ex.maps[l][h], ex.tokens.length));
    }
    return decoded.get(key);
  }
  const ink = (w) => (w > 0.6 ? "#1d2330" : "#fff");

  function roleText(r) {
    if (r.role === "offset") return "offset k=" + r.offset_k + " " + fmt2(r.score);
    if (r.role === "diffuse") return below(strongest(r), r.score);
    return r.role + " " + fmt2(r.score);
  }
  // below and strongest name a head under the role threshold as heads.Below
  // and Result.Strongest do: "diffuse (best: offset k=2 0.03)".
  const below = (pattern, score) => "diffuse (best: " + pattern + " " + fmt2(score) + ")";
  // scores are records {role, score}, in heads.Patterns order.
  function strongest(r) {
    let best = "diffuse", score = 0;
    r.scores.forEach((s) => { if (s.score > score) { best = s.role; score = s.score; } });
    return best === "offset" ? "offset k=" + r.offset_k : best;
  }
  const tokenLabel = (ex, i) => ex.shown[i];
  const isSep = (s) => s === "SEP";

  // ---- the model card ----
  function drawModel() {
    // A model trained elsewhere is named by where it comes from and has no
    // step; the line under the title is the terminal view's first.
    $("title-task").textContent = "· " + (D.source ? D.source : D.task + " · step " + D.step);
    $("title-sub").textContent = D.heading;
    const m = D.model, card = $("model-card");
    const rows = (D.source ? [["model", D.source], ["path", D.checkpoint]] :
      [["task", D.task], ["checkpoint", D.checkpoint], ["step", String(D.step)]]).concat([
      ["layers × heads", m.layers + " × " + m.heads],
      ["d_model / d_head", m.d_model + " / " + (m.head_dim || m.d_model / m.heads)],
      // The blocks in the terminal's words (model.Config.Blocks, -json's "blocks").
      ["blocks", I.blocks + (m.mlp ? " (d_ff " + m.d_ff + ")" : "")],
      ["vocabulary / context", m.vocab + " / " + m.context],
      ["biases", ["qkv_bias", "out_bias", "lm_head_bias"].filter((k) => m[k]).join(", ") || "none"],
      ["dropout", String(m.dropout)],
      ["attention", I.family || "learned positions, multi-head"],
      ["parameters", D.params.toLocaleString("en-US") + " (" + D.dtype + ")"],
    ]);
    for (const [k, v] of rows) { el("dt", {}, card, k); el("dd", {}, card, v); }
    if (D.graph) drawGraph(D.graph);
  }
  function drawGraph(g) {
    $("graph").hidden = false;
    $("graph-title").textContent = "Expression graph (" + g.path + " path, batch " + D.graph_batch + ", length " + D.graph_length + "): " + g.op_nodes +
      " op nodes, " + g.builtin_ops + " Gorgonia's own, " + g.project_ops + " attnscope's (orange)";
    const tb = $("graph-table"), head = el("tr", {}, tb);
    ["#", "node", "op", "shape", "params"].forEach((h) => el("th", {}, head, h));
    g.rows.forEach((r, i) => {
      const tr = el("tr", {class: r.builtin ? "builtin" : "project"}, tb);
      el("td", {class: "num"}, tr, String(i + 1));
      el("td", {}, tr, r.name);
      el("td", {}, tr, r.op);
      el("td", {}, tr, "(" + r.shape.join(", ") + ")");
      el("td", {class: "num"}, tr, r.params ? r.params.toLocaleString("en-US") : "");
    });
  }

  // ---- examples and predictions ----
  function correct(ex) {
    let ok = 0, n = 0;
    ex.targets.forEach((t, i) => { if (t !== null) { n++; if (ex.predictions[i] === t) ok++; } });
    return [ok, n];
  }
  function drawSelector() {
    const sel = $("example");
    examples.forEach((ex, i) => {
      const [ok, n] = correct(ex);
      el("option", {value: String(i)}, sel, (i === 0 ? "shown by inspect" : ex.source) + " · " + ok + "/" + n + " correct");
    });
    sel.addEventListener("change", () => { state.ex = Number(sel.value); drawExample(); });
  }
  function softmax(row) {
    const mx = Math.max.apply(null, row);
    const e = row.map((v) => Math.exp(v - mx)), s = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / s);
  }
  function drawPredictions() {
    const ex = examples[state.ex], tb = clear($("predictions"));
    const [ok, n] = correct(ex);
    $("example-note").textContent = "Example " + state.ex + " of " + examples.length + " (" + ex.source + "): " +
      ok + " of " + n + " scored positions predicted right. Shaded columns are scored; p is the model's probability of its prediction.";
    const rows = ["position", "token", "target", "predicted", "p"].map((name) => { const r = el("tr", {}, tb); el("th", {}, r, name); return r; });
    ex.tokens.forEach((_, i) => {
      const t = ex.targets[i], scored = t !== null, cls = scored ? "scored" : "";
      const p = ex.logits ? softmax(ex.logits[i])[ex.predictions[i]]
        : Math.exp(ex.logits_top[i].find((e) => e.id === ex.predictions[i]).logit - ex.logits_lse[i]);
      el("td", {class: cls}, rows[0], String(i));
      el("td", {class: cls + (isSep(ex.labels[i]) ? " sep" : "")}, rows[1], tokenLabel(ex, i));
      el("td", {class: cls}, rows[2], scored ? labelOf(t) : "");
      const good = ex.predictions[i] === t;
      el("td", {class: cls + (scored ? (good ? " ok" : " wrong") : ""), title: scored ? (good ? "right" : "wrong") : "not scored"},
        rows[3], predictedLabel(ex, i) + (scored ? (good ? " ✓" : " ✗") : ""));
      el("td", {class: cls}, rows[4], fmt2(p));
    });
  }
  // labelOf names a token id from any example that holds it.
  const labels = {};
  examples.forEach((ex) => ex.tokens.forEach((id, i) => { labels[id] = tokenLabel(ex, i); }));
  const labelOf = (id) => (id in labels ? labels[id] : String(id));
  // predictedLabel is the label of the prediction at position i as the
  // terminal's "predicted" row shows it (a prediction need not be a token
  // of any example).
  const predictedLabel = (ex, i) => (ex.shownPredicted ? ex.shownPredicted[i] : labelOf(ex.predictions[i]));

  // ---- the grid of thumbnails ----
  // Every head is a cell of a layers x heads grid whose columns share the
  // width (up to 132 px each), so every head is on screen without sideways
  // scrolling however many heads a layer has. A cell's canvas holds the
  // map at one pixel a weight, scaled by CSS; it is drawn only when it
  // scrolls into view (an IntersectionObserver) and only again when the
  // example changes, so a page of a thousand heads draws the few dozen on
  // screen, never all of them at once.
  // kvOf names the key-value head query head h reads, when query heads
  // share them (grouped-query attention: -json's kv_head).
  const kvOf = (h) => (I.kv_head ? " · kv " + I.kv_head[h] : "");
  const thumbs = [];
  // Above MANY_HEADS heads a layer the grid takes the page's whole width;
  // above MANY_CAPTIONS its captions are smaller and the ablation table
  // goes under it.
  const MANY_HEADS = 4, MANY_CAPTIONS = 8;
  let onScreen = null;
  function drawGrid() {
    const grid = $("grid");
    grid.style.gridTemplateColumns = "auto repeat(" + headsPerLayer + ", minmax(0, 132px))";
    if (headsPerLayer > MANY_HEADS) $("heads").classList.add("wide");
    grid.classList.toggle("many", headsPerLayer > MANY_CAPTIONS);
    $("roles-note").textContent = "Click a head to open it below. " + D.role_note.charAt(0).toUpperCase() + D.role_note.slice(1) + ".";
    if ("IntersectionObserver" in window) {
      onScreen = new IntersectionObserver((entries) => entries.forEach((e) => {
        const t = e.target.thumb;
        t.visible = e.isIntersecting;
        if (t.visible) drawThumb(t);
      }), {rootMargin: "200px"});
    }
    for (let l = 0; l < layers; l++) {
      // A local/global model's layers say which they are, local ones
      // marked as the terminal's panel titles mark them.
      const label = el("div", {class: "layer-label" + (kindOf(l) ? " " + kindOf(l) : "")}, grid, "layer " + l);
      if (kindOf(l)) el("span", {class: "kind", title: kindOf(l) === "local" ? "windowed: each query sees the last " + D.model.window + " positions" : "sees every earlier position"}, label, " · " + kindOf(l));
      thumbs[l] = [];
      for (let h = 0; h < headsPerLayer; h++) {
        const r = I.heads[l][h];
        const fig = el("figure", {class: "thumb" + (kindOf(l) ? " " + kindOf(l) : ""), role: "listitem", "data-layer": l, "data-head": h, tabindex: "0",
          title: "layer " + l + (kindOf(l) ? " (" + kindOf(l) + ")" : "") + ", head " + h + kvOf(h) + ": " + roleText(r)}, grid);
        const c = el("canvas", {}, fig);
        const cap = el("figcaption", {}, fig);
        el("b", {}, cap, "L" + l + " H" + h + kvOf(h));
        el("br", {}, cap);
        el("span", {class: "role role-" + r.role, title: "entropy " + fmt2(r.entropy) + " nats"}, cap, roleText(r));
        const pick = () => { state.layer = l; state.head = h; drawFocus(); };
        fig.addEventListener("click", pick);
        fig.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") pick(); });
        thumbs[l][h] = fig.thumb = {fig: fig, canvas: c, layer: l, head: h, drawn: -1, visible: !onScreen};
        if (onScreen) onScreen.observe(fig);
      }
    }
  }
  // drawThumb draws a head's map on the example shown, unless it already
  // shows it: T x T pixels, masked keys grey; past 32 positions its
  // thumbnail instead (htmlview.EncodeThumb: at most 32 x 32 cells of a
  // byte, 255 masked), so that a cell decodes a kilobyte, not its map.
  function drawThumb(t) {
    if (t.drawn === state.ex) return;
    const ex = examples[state.ex];
    if (ex.thumbs) {
      const b = atob(ex.thumbs[t.layer][t.head]), n = Math.round(Math.sqrt(b.length));
      paint(t.canvas, n, (q, k) => { const v = b.charCodeAt(q * n + k); return v === 255 ? MASKED : rgb(v / 254); });
    } else {
      const T = ex.tokens.length, a = decodeMap(ex.maps[t.layer][t.head], T);
      paint(t.canvas, T, (q, k) => (isMasked(t.layer, q, k) ? MASKED : rgb(a[q][k])));
    }
    t.drawn = state.ex;
  }
  // paint fills canvas with n x n pixels, cell (row, column) of colour
  // colorAt(row, column).
  function paint(canvas, n, colorAt) {
    canvas.width = n; canvas.height = n;
    const g = canvas.getContext("2d"), img = g.createImageData(n, n);
    for (let q = 0; q < n; q++) for (let k = 0; k < n; k++) {
      const c = colorAt(q, k), i = 4 * (q * n + k);
      img.data[i] = c[0]; img.data[i + 1] = c[1]; img.data[i + 2] = c[2]; img.data[i + 3] = 255;
    }
    g.putImageData(img, 0, 0);
  }
  // ---- the ablation table (inspect -ablate) ----
  function drawAblation() {
    const a = I.ablation;
    if (!a) return;
    const box = $("ablation");
    box.hidden = false;
    // Room for the table beside the thumbnails; the model card then spans
    // the page too, in two columns of rows.
    $("heads").classList.add("wide");
    $("model").classList.add("wide");
    el("h3", {}, box, "Each head removed (" + (a.mode === "mean" ? "replaced by its mean" : "zeroed") + ")");
    // A language model never writes a whole window exactly: its token
    // accuracy says more than an exact match that is 0 throughout.
    const lm = D.task === "text", second = lm ? "token accuracy" : "exact match";
    const intact = lm ? a.intact.token_acc : a.intact.exact_match, delta = (r) => lm ? r.delta_token_acc : r.delta_exact_match;
    el("p", {class: "note"}, box, "On " + a.examples + " held-out examples; intact loss " + a.intact.loss.toFixed(4) +
      ", " + second + " " + fmt3(intact) + ". Most important first; click a row to open the head.");
    const tb = el("table", {class: "ablation"}, box), head = el("tr", {}, tb);
    ["layer", "head", "role", "loss", "Δloss", "Δ" + second].forEach((h) => el("th", {}, head, h));
    const most = Math.max.apply(null, a.rows.map((r) => Math.abs(r.delta_loss))) || 1;
    a.rows.forEach((r) => {
      const tr = el("tr", {"data-layer": r.layer, "data-head": r.head}, tb);
      el("td", {}, tr, String(r.layer));
      el("td", {}, tr, String(r.head));
      el("td", {}, tr, r.role || "");
      el("td", {}, tr, r.loss.toFixed(4));
      const d = el("td", {class: "delta"}, tr);
      el("span", {class: "bar", style: "width:" + Math.round(60 * Math.abs(r.delta_loss) / most) + "px"}, d);
      el("span", {}, d, (r.delta_loss >= 0 ? "+" : "") + r.delta_loss.toFixed(4));
      el("td", {}, tr, (delta(r) >= 0 ? "+" : "") + fmt3(delta(r)));
      tr.addEventListener("click", () => { state.layer = r.layer; state.head = r.head; drawFocus(); });
    });
  }

  // ---- the circuit metrics (inspect -circuits) ----
  // Each number sits in a cell coloured by where it falls in its column's
  // range, on the heatmaps' scale.
  function scoreCell(tr, v, lo, hi, text) {
    const w = hi > lo ? (v - lo) / (hi - lo) : 0;
    el("td", {class: "score", style: "background:" + color(w) + ";color:" + ink(w)}, tr, text);
  }
  function drawCircuits() {
    const c = I.circuits;
    if (!c) return;
    const box = $("circuits");
    box.hidden = false;
    const notes = ["Prefix matching: each head's attention from a repeated token to the token after its first occurrence, on random tokens repeated twice. " +
      "Copying: the eigenvalues of the head's OV circuit (1 copies, -1 suppresses) and the share of tokens it raises most."];
    if (c.direct_logit) notes.push("Logit: what the head adds to the correct token's logit (of " + fmt3(c.direct_logit.logit) + ") at the scored positions" +
      (c.direct_logit.mlps ? "; the MLPs add " + c.direct_logit.mlps.map((x) => (x >= 0 ? "+" : "") + fmt3(x)).join(", ") + " by layer." : ".") +
      // What it does where the readout is not linear (direct_logit.readout).
      (c.direct_logit.readout ? " Where the readout is not linear: " + c.direct_logit.readout + "." : ""));
    if (c.patching && c.patching.restored === null) notes.push("Patched: n/a, undefined: " + c.patching.undefined + ".");
    else if (c.patching) notes.push("Patched: the share of the correct logit's fall (" + fmt3(c.patching.clean_logit) + " to " + fmt3(c.patching.corrupted_logit) +
      ") that patching the head's clean output into a corrupted run restores.");
    if (c.icl) notes.push("In-context learning: the copy's loss " + fmt3(c.icl.late_loss) + " against " + fmt3(c.icl.early_loss) +
      " for the same predictions at the block's first occurrence, a score of " + fmt3(c.icl.score) + ".");
    notes.forEach((n) => el("p", {class: "note"}, box, n));
    // With -layer or -head only the heads picked are patched (patching.heads).
    const picked = c.patching && c.patching.heads ? new Set(c.patching.heads.map(String)) : null;
    const patched = (l, h) => !picked || picked.has(l + "," + h);
    const tb = el("table", {class: "ablation circuits", id: "circuits-heads"}, box), head = el("tr", {}, tb);
    const cols = ["layer", "head", "prefix", "copying", "diagonal"];
    if (c.direct_logit) cols.push("logit");
    if (c.patching) cols.push("patched");
    cols.forEach((h) => el("th", {}, head, h));
    let lo = 0, hi = 0;
    if (c.direct_logit) c.direct_logit.heads.forEach((l) => l.forEach((v) => { lo = Math.min(lo, v); hi = Math.max(hi, v); }));
    c.copying.forEach((cp) => {
      const tr = el("tr", {"data-layer": cp.layer, "data-head": cp.head}, tb);
      el("td", {}, tr, String(cp.layer));
      el("td", {}, tr, String(cp.head));
      scoreCell(tr, c.prefix_matching[cp.layer][cp.head], 0, 1, fmt3(c.prefix_matching[cp.layer][cp.head]));
      scoreCell(tr, cp.score, -1, 1, (cp.score >= 0 ? "+" : "") + fmt3(cp.score));
      if (cp.diagonal === null) el("td", {}, tr, "–"); else scoreCell(tr, cp.diagonal, 0, 1, fmt3(cp.diagonal));
      if (c.direct_logit) {
        const v = c.direct_logit.heads[cp.layer][cp.head];
        scoreCell(tr, v, lo, hi, (v >= 0 ? "+" : "") + fmt3(v));
      }
      if (c.patching && c.patching.restored === null) el("td", {}, tr, "n/a");
      else if (c.patching && !patched(cp.layer, cp.head)) el("td", {}, tr, "–");
      else if (c.patching) scoreCell(tr, c.patching.restored[cp.layer][cp.head], 0, 1, fmt3(c.patching.restored[cp.layer][cp.head]));
      tr.addEventListener("click", () => { state.layer = cp.layer; state.head = cp.head; drawFocus(); });
    });
    if (c.composition && c.composition.length) drawCompositions(c.composition, box);
    if (c.logit_lens && c.logit_lens.length) {
      el("h3", {}, box, "Logit lens");
      el("p", {class: "note", id: "lens-note"}, box, "The residual stream read out through the LM head after the embeddings and after each block, at the scored positions." +
        (c.logit_lens_readout ? " Where the readout is not linear: " + c.logit_lens_readout + "." : ""));
      const t = el("table", {class: "ablation circuits", id: "circuits-lens"}, box), hr = el("tr", {}, t);
      ["depth", "accuracy", "log p", "target logit"].forEach((h) => el("th", {}, hr, h));
      const low = Math.min.apply(null, c.logit_lens.map((x) => x.log_prob).concat([0]));
      c.logit_lens.forEach((x) => {
        const tr = el("tr", {}, t);
        el("td", {}, tr, x.depth === 0 ? "embed" : "block " + (x.depth - 1));
        scoreCell(tr, x.accuracy, 0, 1, fmt3(x.accuracy));
        scoreCell(tr, x.log_prob, low, 0, fmt3(x.log_prob));
        el("td", {}, tr, fmt3(x.correct));
      });
    }
  }

  // ---- activation patching (inspect -patch) ----
  // One row for each layer (or each layer's head, by position), one
  // column for each position or head; each cell the metric patched, on
  // the colour of the share of the corrupted-to-clean move it restores.
  function drawPatching() {
    const p = I.patching;
    if (!p) return;
    const box = $("patching");
    box.hidden = false;
    const gap = p.clean - p.corrupted, share = (v) => gap === 0 ? 0 : (v - p.corrupted) / gap;
    // The labels here come raw from -json: control and bidi characters read as \u escapes.
    const safe = (x) => x.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g,
      (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
    const metric = p.metric === "loss" ? "the clean text's next-token loss" :
      "the logit of \u201c" + safe(p.answer.label) + "\u201d minus that of \u201c" + safe(p.wrong.label) + "\u201d after the last position";
    el("p", {class: "note"}, box, "Patching " + p.kind + " from the clean input into the corrupted one (" + p.corrupt_labels.map(safe).join(" ") +
      "), " + safe(p.how) + ". Metric: " + metric + "; clean " + fmt3(p.clean) + ", corrupted " + fmt3(p.corrupted) +
      ". Each cell is the metric patched, coloured by the share it restores; \u2013 where not patched.");
    const byHead = p.axes[1] === "head", byPos = p.axes[p.axes.length - 1] === "pos";
    const cols = byPos ? examples[0].shown.map((x, t) => t + " " + x) : p.heads.map((h) => "H" + h);
    const tb = el("table", {class: "ablation circuits", id: "patching-table"}, box), hr = el("tr", {}, tb);
    el("th", {}, hr, "");
    cols.forEach((c) => el("th", {}, hr, c));
    const row = (label, values) => {
      const tr = el("tr", {}, tb);
      el("td", {}, tr, label);
      values.forEach((v) => { if (v === null) el("td", {}, tr, "\u2013"); else scoreCell(tr, share(v), 0, 1, fmt3(v)); });
    };
    p.layers.forEach((l, i) => {
      if (!byHead) row("L" + l, p.values[i]);
      else if (!byPos) row("L" + l, p.values[i]);
      else p.heads.forEach((h, j) => row("L" + l + " H" + h, p.values[i][j]));
    });
  }

  // drawCompositions draws a table of K-composition for each pair of
  // consecutive layers, each built only when it comes near the screen
  // (whenNear): 32 layers of 32 heads are 31 tables of 1,024 cells. A
  // cell's value is looked up by its pair of heads, never searched for.
  function drawCompositions(all, box) {
    el("h3", {}, box, "K-composition between consecutive layers");
    const most = all.reduce((m, x) => Math.max(m, x.k), 0) || 1, byPair = new Map();
    all.forEach((x) => byPair.set(x.from + ">" + x.to, x));
    for (let l = 0; l + 1 < layers; l++) {
      // Until it is built, a table's place holds its height: rows of about 20 px.
      const place = el("div", {class: "composition", "data-layer": l, style: "min-height:" + 20 * (headsPerLayer + 1) + "px"}, box);
      whenNear(place, () => {
        place.style.minHeight = "";
        const t = el("table", {class: "ablation circuits"}, place), hr = el("tr", {}, t);
        el("th", {}, hr, "from \\ to");
        for (let h = 0; h < headsPerLayer; h++) el("th", {}, hr, "L" + (l + 1) + " H" + h);
        for (let f = 0; f < headsPerLayer; f++) {
          const tr = el("tr", {}, t);
          el("td", {}, tr, "L" + l + " H" + f);
          for (let h = 0; h < headsPerLayer; h++) {
            const x = byPair.get(l + "," + f + ">" + (l + 1) + "," + h);
            scoreCell(tr, x ? x.k : 0, 0, most, x ? fmt3(x.k) : "");
          }
        }
      });
    }
  }
  // whenNear runs draw once e comes within a screen of view (at once
  // without an IntersectionObserver).
  function whenNear(e, draw) {
    if (!("IntersectionObserver" in window)) { draw(); return; }
    const seen = new IntersectionObserver((entries) => {
      if (entries.some((x) => x.isIntersecting)) { seen.disconnect(); draw(); }
    }, {rootMargin: "1000px 0px"});
    seen.observe(e);
  }

  // drawThumbs draws the cells on screen (the others as they scroll into
  // view) and marks the head open and its rows in the tables.
  function drawThumbs() {
    thumbs.flat().forEach((t) => {
      if (t.visible) drawThumb(t);
      t.fig.classList.toggle("selected", t.layer === state.layer && t.head === state.head);
    });
    document.querySelectorAll("#ablation tr[data-layer], #roles-table tr[data-layer], #circuits-heads tr[data-layer]").forEach((tr) =>
      tr.classList.toggle("selected", Number(tr.dataset.layer) === state.layer && Number(tr.dataset.head) === state.head));
  }

  // ---- the large view ----
  const tip = $("tooltip");
  function showTip(e, html) {
    tip.innerHTML = html; tip.hidden = false;
    const pad = 14, w = tip.offsetWidth, h = tip.offsetHeight;
    let x = e.clientX + pad, y = e.clientY + pad;
    if (x + w > window.innerWidth) x = e.clientX - w - pad;
    if (y + h > window.innerHeight) y = e.clientY - h - pad;
    tip.style.left = x + "px"; tip.style.top = y + "px";
  }
  function hideTip() { tip.hidden = true; }
  function esc(s) { return String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;"}[c])); }

  // tickEvery is the smallest stride of 1, 2, 5, 10, 20, ... whose ticks sit
  // at least room pixels apart on an axis of cell pixels a position.
  function tickEvery(cell, room) {
    for (let k = 1; ; k *= 10) for (const f of [1, 2, 5]) if (f * k * cell >= room) return f * k;
  }
  function drawLarge() {
    const ex = examples[state.ex], T = ex.tokens.length, a = mapOf(ex, state.layer, state.head);
    const svg = clear($("large"));
    const cell = Math.max(10, Math.min(30, Math.floor(480 / T)));
    // Small cells get labels no taller than a cell, key labels too wide for
    // one stood on end, and position numbers only every few positions, so
    // that none runs into the next.
    const font = Math.min(13, cell - 1), longest = Math.max(...ex.shown.map((l) => l.length));
    const upright = longest * font * 0.62 > cell, keyRoom = upright ? Math.min(longest, 16) * font * 0.62 + 6 : font + 4;
    const keyEvery = tickEvery(cell, 26), rowEvery = tickEvery(cell, 13);
    const left = 74, top = 40 + keyRoom, size = cell * T;
    svg.setAttribute("width", left + size + 8); svg.setAttribute("height", top + size + 8);
    sv("text", {x: left + size / 2, y: 12, "text-anchor": "middle", class: "axis-title"}, svg, "key (position · token) →");
    sv("text", {x: 10, y: top + size / 2, "text-anchor": "middle", class: "axis-title", transform: "rotate(-90 10 " + (top + size / 2) + ")"}, svg, "query ↓");
    for (let i = 0; i < T; i++) {
      const x = left + i * cell + cell / 2, cls = "tok" + (isSep(ex.labels[i]) ? " sep" : ""), size = "font-size:" + font + "px";
      if (i % keyEvery === 0) sv("text", {x: x, y: top - keyRoom - 8, "text-anchor": "middle", class: "axis-title"}, svg, String(i));
      const key = upright ?
        {x: x + font / 3, y: top - 6, "text-anchor": "start", transform: "rotate(-90 " + (x + font / 3) + " " + (top - 6) + ")"} :
        {x: x, y: top - 6, "text-anchor": "middle"};
      sv("text", Object.assign(key, {class: cls, style: size, "data-axis": "key"}), svg, tokenLabel(ex, i));
      const y = top + i * cell + cell / 2 + font / 3;
      if (i % rowEvery === 0) sv("text", {x: left - 40, y: y, "text-anchor": "end", class: "axis-title"}, svg, String(i));
      sv("text", {x: left - 6, y: y, "text-anchor": "end", class: cls, style: size, "data-axis": "query"}, svg, tokenLabel(ex, i));
    }
    const g = sv("g", {}, svg);
    for (let q = 0; q < T; q++) for (let k = 0; k < T; k++) {
      const masked = isMasked(state.layer, q, k), w = a[q][k];
      const r = sv("rect", {x: left + k * cell, y: top + q * cell, width: cell, height: cell,
        class: "cell" + (masked ? " masked" : ""), "data-q": q, "data-k": k}, g);
      if (!masked) r.setAttribute("fill", color(w));
      r.addEventListener("mousemove", (e) => {
        const head = "query " + q + " <b>" + esc(tokenLabel(ex, q)) + "</b> → key " + k + " <b>" + esc(tokenLabel(ex, k)) + "</b>";
        showTip(e, head + "<br>" + (masked ? (k > q ? "masked (a key after the query)" : "masked (outside the window)") : "weight <b class=\"weight\">" + fmt3(w) + "</b>"));
        highlightQuery(q);
      });
      r.addEventListener("mouseleave", () => { hideTip(); highlightQuery(-1); });
      if (!masked && cell >= 22 && w >= 0.005) {
        sv("text", {x: left + k * cell + cell / 2, y: top + q * cell + cell / 2 + 4, "text-anchor": "middle",
          "pointer-events": "none", style: "font-size:9.5px;fill:" + ink(w)}, g, w >= 0.995 ? "1" : fmt2(w).slice(1));
      }
    }
    largeRow = sv("rect", {class: "row-hl", x: left, y: top, width: size, height: cell, visibility: "hidden"}, svg);
    largeGeom = {top: top, cell: cell};
  }
  let largeRow = null, largeGeom = null;

  function drawScale() {
    const svg = clear($("scale")), w = 260;
    svg.setAttribute("width", w + 150); svg.setAttribute("height", 40);
    const grad = sv("linearGradient", {id: "scale-gradient"}, sv("defs", {}, svg));
    for (let i = 0; i <= 16; i++) sv("stop", {offset: (i / 16), "stop-color": color(i / 16)}, grad);
    sv("rect", {x: 8, y: 4, width: w, height: 12, fill: "url(#scale-gradient)", stroke: "#e4e7ec"}, svg);
    [0, 0.25, 0.5, 0.75, 1].forEach((v) => sv("text", {x: 8 + v * w, y: 30, "text-anchor": "middle", class: "axis-title"}, svg, String(v)));
    sv("rect", {x: w + 30, y: 4, width: 12, height: 12, fill: "#eceef2"}, svg);
    sv("text", {x: w + 48, y: 14, class: "axis-title"}, svg, "masked");
  }

  // ---- the head view ----
  let highlightQuery = () => {};
  function drawLines() {
    const ex = examples[state.ex], T = ex.tokens.length, a = mapOf(ex, state.layer, state.head);
    const svg = clear($("lines"));
    const row = Math.max(14, Math.min(24, Math.floor(520 / T))), top = 24, xl = 84, xr = 276;
    svg.setAttribute("width", 360); svg.setAttribute("height", top + row * T + 8);
    svg.classList.remove("active");
    sv("text", {x: xl, y: 12, "text-anchor": "end", class: "axis-title"}, svg, "query");
    sv("text", {x: xr, y: 12, class: "axis-title"}, svg, "key");
    const yOf = (i) => top + i * row + row / 2;
    const links = [], weights = [];
    for (let q = 0; q < T; q++) for (let k = 0; k <= q; k++) {
      const w = a[q][k];
      if (w < 0.01) continue;
      const p = sv("path", {class: "link", d: "M" + (xl + 6) + "," + yOf(q) + " C" + ((xl + xr) / 2) + "," + yOf(q) + " " + ((xl + xr) / 2) + "," + yOf(k) + " " + (xr - 6) + "," + yOf(k),
        "stroke-opacity": Math.min(1, 0.15 + 0.85 * w), "stroke-width": 0.5 + 3.5 * w}, svg);
      links.push({q: q, k: k, w: w, el: p});
    }
    const left = [], right = [];
    for (let i = 0; i < T; i++) {
      const c = "tok" + (isSep(ex.labels[i]) ? " sep" : "");
      left[i] = sv("text", {x: xl, y: yOf(i) + 4, "text-anchor": "end", class: c, "data-q": i}, svg, i + " · " + tokenLabel(ex, i));
      right[i] = sv("text", {x: xr, y: yOf(i) + 4, class: c, "data-k": i}, svg, i + " · " + tokenLabel(ex, i));
      weights[i] = sv("text", {x: xr + 46, y: yOf(i) + 4, class: "w"}, svg, "");
    }
    const reset = () => {
      svg.classList.remove("active");
      links.forEach((l) => l.el.classList.remove("hl"));
      left.concat(right).forEach((t) => t.classList.remove("hl"));
      weights.forEach((t) => { t.textContent = ""; });
    };
    const onQuery = (q) => {
      reset();
      if (q < 0) return;
      svg.classList.add("active"); left[q].classList.add("hl");
      links.forEach((l) => { if (l.q === q) l.el.classList.add("hl"); });
      for (let k = 0; k <= q; k++) weights[k].textContent = fmt3(a[q][k]);
    };
    const onKey = (k) => {
      reset();
      svg.classList.add("active"); right[k].classList.add("hl");
      links.forEach((l) => { if (l.k === k) { l.el.classList.add("hl"); left[l.q].classList.add("hl"); } });
    };
    left.forEach((t, q) => { t.addEventListener("mouseenter", () => onQuery(q)); t.addEventListener("mouseleave", reset); });
    right.forEach((t, k) => { t.addEventListener("mouseenter", () => onKey(k)); t.addEventListener("mouseleave", reset); });
    highlightQuery = (q) => {
      onQuery(q);
      if (largeRow) {
        largeRow.setAttribute("visibility", q < 0 ? "hidden" : "visible");
        if (q >= 0) largeRow.setAttribute("y", largeGeom.top + q * largeGeom.cell);
      }
    };
  }

  function drawFocus() {
    const r = I.heads[state.layer][state.head];
    $("focus-title").textContent = "Layer " + state.layer + (kindOf(state.layer) ? " (" + kindOf(state.layer) + ")" : "") + ", head " + state.head +
      (I.kv_head ? " (key-value head " + I.kv_head[state.head] + ")" : "");
    const scores = r.scores.map((s) => s.role + " " + fmt2(s.score)).join(" · ");
    $("focus-role").textContent = "Role: " + roleText(r) + ". Scores: " + scores + ". Mean row entropy " + fmt2(r.entropy) +
      " nats (" + fmt2(r.entropy_norm) + " of uniform). Example " + state.ex + ": " + examples[state.ex].source + ".";
    drawThumbs(); drawLarge(); drawLines();
  }
  function drawExample() { drawPredictions(); drawFocus(); }

  // ---- training curves ----
  function chart(svg, series, opts) {
    const W = 540, Hh = 240, m = {l: 52, r: 14, t: 12, b: 52};
    svg.setAttribute("width", W); svg.setAttribute("height", Hh); svg.classList.add("chart");
    const all = series.flatMap((s) => s.points);
    if (all.length === 0) return;
    const x0 = Math.min.apply(null, all.map((p) => p[0])), x1 = Math.max.apply(null, all.map((p) => p[0]));
    let ys = all.map((p) => p[1]);
    const log = opts.log && ys.every((v) => v > 0);
    const tf = log ? Math.log10 : (v) => v;
    let y0 = opts.y0 !== undefined ? opts.y0 : Math.min.apply(null, ys.map(tf));
    let y1 = opts.y1 !== undefined ? opts.y1 : Math.max.apply(null, ys.map(tf));
    if (log) { y0 = Math.floor(y0); y1 = Math.ceil(y1); }
    if (y1 === y0) y1 = y0 + 1;
    const X = (v) => m.l + (x1 === x0 ? 0.5 : (v - x0) / (x1 - x0)) * (W - m.l - m.r);
    const Y = (v) => Hh - m.b - (tf(v) - y0) / (y1 - y0) * (Hh - m.t - m.b);
    const grid = sv("g", {class: "grid"}, svg);
    const yt = log ? range(y0, y1, 1).map((e) => Math.pow(10, e)) : range(0, 4, 1).map((i) => y0 + (y1 - y0) * i / 4);
    yt.forEach((v) => {
      sv("line", {x1: m.l, x2: W - m.r, y1: Y(v), y2: Y(v)}, grid);
      sv("text", {x: m.l - 6, y: Y(v) + 4, "text-anchor": "end", class: "axis-title"}, svg, log ? ("1e" + Math.round(Math.log10(v))) : fmt2(v));
    });
    niceSteps(x0, x1).forEach((v) => sv("text", {x: X(v), y: Hh - m.b + 16, "text-anchor": "middle", class: "axis-title"}, svg, String(v)));
    sv("text", {x: W - m.r, y: Hh - m.b + 30, "text-anchor": "end", class: "axis-title"}, svg, "step →");
    if (D.step >= x0 && D.step <= x1) {
      sv("line", {x1: X(D.step), x2: X(D.step), y1: m.t, y2: Hh - m.b, stroke: "#98a2b3", "stroke-dasharray": "3 3"}, svg);
    }
    series.forEach((s, i) => {
      if (s.points.length === 0) return;
      sv("polyline", {class: "series", stroke: s.color, "stroke-width": s.width || 1.6,
        points: s.points.map((p) => X(p[0]).toFixed(1) + "," + Y(p[1]).toFixed(1)).join(" ")}, svg);
      if (s.dots) s.points.forEach((p) => {
        const c = sv("circle", {cx: X(p[0]), cy: Y(p[1]), r: 2.6, fill: s.color}, svg);
        sv("title", {}, c, s.name + " at step " + p[0] + ": " + Number(p[1]).toPrecision(4));
      });
      // Three legend entries a row; more runs add rows below the chart.
      const lx = m.l + (i % 3) * 160, ly = Hh - 14 + Math.floor(i / 3) * 14;
      if (ly + 6 > svg.getAttribute("height")) svg.setAttribute("height", ly + 6);
      sv("rect", {x: lx, y: ly, width: 14, height: 3, fill: s.color}, svg);
      sv("text", {x: lx + 20, y: ly + 5, class: "legend"}, svg, s.name);
    });
  }
  function range(a, b, step) { const r = []; for (let v = a; v <= b + 1e-9; v += step) r.push(v); return r; }
  function niceSteps(a, b) {
    const span = b - a || 1, raw = span / 5, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((f) => f * mag).find((s) => span / s <= 6);
    const out = [];
    for (let v = Math.ceil(a / step) * step; v <= b; v += step) out.push(v);
    return out;
  }
  // Each head's strongest role (at the last evaluation) through training, a
  // sparkline a head, with the step it first passed the formed mark.
  function drawRoleHistory(hist) {
    $("roles-history").hidden = false;
    const tb = $("roles-table"), head = el("tr", {}, tb);
    ["head", "role at the last evaluation", "formed at step", "score over training (dashed: " + fmt2(FORMED_AT) + ")"].forEach((h) => el("th", {}, head, h));
    const W = 300, H = 36, pad = 3;
    hist.flat().forEach((r) => {
      const tr = el("tr", {"data-layer": r.layer, "data-head": r.head}, tb);
      el("td", {}, tr, "L" + r.layer + " H" + r.head);
      const last = r.scores[r.scores.length - 1];
      const diffuse = last < ROLE_AT;
      el("span", {class: "role role-" + (diffuse ? "diffuse" : r.role)}, el("td", {}, tr), diffuse ? below(r.role, last) : r.role);
      el("td", {class: "num formed"}, tr, r.formed_step === null ? "never" : String(r.formed_step));
      const svg = sv("svg", {width: W, height: H, class: "spark"}, el("td", {}, tr));
      const x0 = r.steps[0], x1 = r.steps[r.steps.length - 1];
      const X = (v) => pad + (x1 === x0 ? 0.5 : (v - x0) / (x1 - x0)) * (W - 2 * pad);
      const Y = (v) => H - pad - Math.min(1, Math.max(0, v)) * (H - 2 * pad);
      sv("line", {x1: pad, x2: W - pad, y1: Y(FORMED_AT), y2: Y(FORMED_AT), class: "mark"}, svg);
      if (r.formed_step !== null) sv("line", {x1: X(r.formed_step), x2: X(r.formed_step), y1: pad, y2: H - pad, class: "mark"}, svg);
      sv("polyline", {class: "series", points: r.steps.map((st, i) => X(st).toFixed(1) + "," + Y(r.scores[i]).toFixed(1)).join(" ")}, svg);
      r.steps.forEach((st, i) => sv("title", {}, sv("circle", {cx: X(st), cy: Y(r.scores[i]), r: 2}, svg), r.role + " at step " + st + ": " + fmt3(r.scores[i])));
      tr.addEventListener("click", () => { state.layer = r.layer; state.head = r.head; drawFocus(); });
    });
  }
  // FORMED_AT is the score above which a role counts as formed (runlog.FormedAt).
  const FORMED_AT = 0.5;
  // ROLE_AT is the score a pattern needs to name a head (heads.DefaultThreshold).
  const ROLE_AT = 0.4;

  const COMPARE_COLORS = ["#9b2fae", "#c2410c", "#0e7490", "#4d7c0f"];
  function drawTraining() {
    const T = D.training;
    if (!T) return;
    if (T.heads && T.heads.length) drawRoleHistory(T.heads);
    // A log with no line of a kind has null for it.
    const train = T.train || [], evals = T.eval || [];
    $("training").hidden = false;
    $("training-note").textContent = "From " + T.dir + "/metrics.jsonl: " + train.length + " training lines" +
      (T.stride > 1 ? " (every " + T.stride + "th)" : "") + ", " + evals.length + " evaluations on the held-out set. The dashed line is this checkpoint's step.";
    // Other runs (more -run): their held-out loss and token accuracy, one
    // colour a run, named by their directory.
    const others = (D.compare || []).map((c, i) => ({dir: c.dir, evals: c.eval || [], color: COMPARE_COLORS[i % COMPARE_COLORS.length]}));
    if (others.length) $("training-note").textContent += " Compared with " + others.map((c) => c.dir).join(", ") + ".";
    // A language model's loss also in bits per character (or token); the
    // exact match of whole windows is 0 throughout for it, so not drawn.
    const bits = T.unit ? [{name: "held-out bits/" + (T.unit === "character" ? "char" : T.unit), color: "#7c3aed", points: evals.map((p) => [p.step, p.eval_loss / Math.LN2]), dots: true, width: 2}] : [];
    chart($("loss-chart"), [
      {name: "training loss (batch)", color: "#98a2b3", points: train.map((p) => [p.step, p.loss]), width: 1.2},
      {name: "held-out loss", color: "#2456c7", points: evals.map((p) => [p.step, p.eval_loss]), dots: true, width: 2},
    ].concat(bits, others.map((c) => ({name: c.dir, color: c.color, points: c.evals.map((p) => [p.step, p.eval_loss]), dots: true, width: 2}))), {log: true});
    const exact = T.unit ? [] : [{name: "exact match", color: "#b35c00", points: evals.map((p) => [p.step, p.seq_acc]), dots: true, width: 2}];
    chart($("acc-chart"), [
      {name: "token accuracy", color: "#1a7f37", points: evals.map((p) => [p.step, p.token_acc]), dots: true, width: 2},
    ].concat(exact, lengthSeries(T.eval_at_length || []),
      others.map((c) => ({name: c.dir + " token", color: c.color, points: c.evals.map((p) => [p.step, p.token_acc]), dots: true, width: 2}))), {y0: 0, y1: 1});
  }
  // lengthSeries is the token accuracy at each of train.eval_lengths, shortest
  // first, thin lines under the trained length's.
  const LENGTH_COLORS = ["#0f766e", "#be123c", "#4338ca", "#a16207"];
  function lengthSeries(at) {
    const lengths = Array.from(new Set(at.map((p) => p.eval_length))).sort((a, b) => a - b);
    return lengths.map((l, i) => ({name: "length " + l + " token accuracy", color: LENGTH_COLORS[i % LENGTH_COLORS.length],
      points: at.filter((p) => p.eval_length === l).map((p) => [p.step, p.token_acc]), dots: true, width: 1.2}));
  }

  drawModel();
  drawSelector();
  drawGrid();
  drawAblation();
  drawCircuits();
  drawPatching();
  drawScale();
  drawExample();
  drawTraining();
  document.body.setAttribute("data-ready", "1");
})();
