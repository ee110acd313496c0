// seq2seq serve: the page. Talks to GET /models, POST /translate (one request per model, so each
// model's card fills as soon as it is done) and GET /study. Text from the server is only ever set
// with textContent, never parsed as HTML.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
let MODELS = [];
let requestId = 0;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) node.append(c);
  return node;
}

// One colour per model, the same wherever the model appears (its cards, the study plot): matplotlib's
// tab20, its ten strong colours first, then their light pairs. A model's style is fixed the first
// time its name is seen (the served models in order, then the study's); from the 11th on the plot
// also dashes its line, from the 21st dots it, so 60 models all look different.
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
  "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2",
  "#c7c7c7", "#dbdb8d", "#9edae5"];
const DASHES = ["", "7 4", "2 3"];
const STYLES = new Map();

function styleOf(name) {
  if (!STYLES.has(name)) {
    const k = STYLES.size;
    STYLES.set(name, { color: PALETTE[k % PALETTE.length], dash: DASHES[Math.floor(k / 10) % DASHES.length] });
  }
  return STYLES.get(name);
}

function swatch(name) {
  const s = el("span", { class: "swatch", "data-color": styleOf(name).color });
  s.style.background = styleOf(name).color;
  return s;
}

const num = (x, digits = 2) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
const params = (n) => (n >= 1e6 ? (n / 1e6).toFixed(2) + " M" : n.toLocaleString());

async function init() {
  const resp = await fetch("/models");
  const data = await resp.json();
  MODELS = data.models;
  MODELS.forEach((m) => styleOf(m.name));
  $("#beam").max = data.limits.max_beam;
  $("#subtitle").textContent =
    `${MODELS.length} models · up to ${data.limits.max_lines} lines, ` +
    `${data.limits.max_src_tokens} source pieces a line`;
  $("#models").replaceChildren(...MODELS.map(infoCard));
  if (data.study) {
    $("#open-study").hidden = false;
    $("#open-study").addEventListener("click", openStudy);
  }
  $("#form").addEventListener("submit", (e) => { e.preventDefault(); translate(); });
  $("#text").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); translate(); }
  });
  document.body.dataset.state = "ready";
}

// The info card's rows, each with what is known only: an export or an averaged checkpoint keeps
// little or no training record, and a row of "?" says nothing.
function infoRows(m) {
  const t = m.training;
  const att = !m.attention ? "none (fixed vector)"
    : m.layers * m.heads === 1 ? "one map per step" : `${m.layers} layers × ${m.heads} heads`;
  const known = (x) => x !== null && x !== undefined;
  const trained = [
    known(t.steps) && `checkpoint at step ${t.steps}` + (t.run_steps > t.steps ? ` of ${t.run_steps}` : ""),
    known(t.epoch) && `epoch ${t.epoch}`,
    known(t.train_minutes) && `${t.train_minutes} min`,
  ].filter(Boolean);
  const rows = [["family", m.family], ["parameters", params(m.parameters)], ["attention", att]];
  if (trained.length) rows.push(["trained", trained.join(", ")]);
  if (t.train_pairs) rows.push(["corpus", `${t.train_pairs.toLocaleString()} pairs`]);
  if (known(t.best_score)) {
    rows.push([`best ${t.best_metric}`, num(t.best_score) + (known(t.best_step) ? ` at step ${t.best_step}` : "")]);
  }
  rows.push(["checkpoint", `${m.checkpoint} on ${m.device}`]);
  rows.push(["decode", `beam ${m.beam}, α ${m.decode.length_penalty}, max ${m.decode.max_len_a}·S+${m.decode.max_len_b}` +
    (m.decode_tuned ? " (tuned: decode.yaml)" : ` (not tuned: ${m.tune_hint})`)]);
  return rows;
}

function infoCard(m) {
  const dl = el("dl");
  for (const [k, v] of infoRows(m)) dl.append(el("dt", { text: k }), el("dd", { text: v }));
  return el("div", { class: "info", "data-model": m.name }, el("b", {}, swatch(m.name), m.name), dl);
}

// The request's settings for model m: an empty beam box is the beam the server searches m with.
function settings(m) {
  const given = $("#beam").value.trim();
  const beam = given === "" ? null : Number(given) || 1;
  const lp = $("#lp").value.trim();
  return {
    beam,
    n_best: $("#nbest").checked ? beam ?? m.beam : 1,
    length_penalty: lp === "" ? null : Number(lp),
  };
}

async function translate() {
  const id = ++requestId;
  const t0 = performance.now();
  const text = $("#text").value;
  const status = $("#status");
  status.className = "";
  status.textContent = "translating…";
  document.body.dataset.state = "translating";
  const view = { lines: null };
  $("#results").replaceChildren();
  const errors = [];
  await Promise.all(MODELS.map(async (m) => {
    try {
      const resp = await fetch("/translate", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ text, ...settings(m), models: [m.name] }),
      });
      const data = await resp.json();
      if (!resp.ok) throw Object.assign(new Error(data.detail || resp.statusText), { status: resp.status });
      if (id !== requestId) return;
      skeleton(view, data.sources);
      fill(view, m, data.models[0]);
    } catch (e) {
      errors.push({ name: m.name, status: e.status, message: e.message });
    }
  }));
  if (id !== requestId) return;  // a newer request took over the page
  const ms = performance.now() - t0;
  if (errors.length) {
    status.className = "error";
    status.textContent = errorLine(errors);
  } else if (!view.lines || !view.lines.length) {
    status.textContent = "nothing to translate";
  } else {
    status.textContent = `${MODELS.length} models shown in ${ms.toFixed(0)} ms`;
  }
  document.body.dataset.shownMs = ms.toFixed(1);
  document.body.dataset.state = errors.length ? "error" : "done";
}

// The status line for the models' errors ({name, status, message}): a message every model gave is
// said once; so is a text or line too long (413), which each model refuses in its own words.
function errorLine(errors) {
  const long = errors.filter((e) => e.status === 413);
  const rest = errors.filter((e) => e.status !== 413);
  const said = new Set(rest.map((e) => e.message)).size === 1 && !long.length
    ? [rest[0].message] : rest.map((e) => `${e.name}: ${e.message}`);
  if (long.length) {
    const others = long.length - 1;
    const same = long.every((e) => e.message === long[0].message);
    said.unshift(long[0].message + (others && !same ? ` (and ${others} more ${others > 1 ? "models" : "model"} likewise)` : ""));
  }
  return said.join("; ");
}

function skeleton(view, sources) {
  if (view.lines) return;
  view.lines = sources.map((src, i) => {
    if (!src) {
      const blank = el("section", { class: "line blank muted", text: `line ${i + 1}: blank, nothing to translate` });
      $("#results").append(blank);
      return null;
    }
    const cards = {};
    const grid = el("div", { class: "cards" });
    for (const m of MODELS) {
      cards[m.name] = el("div", { class: "card", "data-model": m.name, "data-state": "pending" },
        el("div", { class: "card-head" }, el("b", {}, swatch(m.name), m.name)), el("span", { text: "translating…" }));
      grid.append(cards[m.name]);
    }
    const label = sources.length > 1 ? `${i + 1}. ` : "";
    $("#results").append(el("section", { class: "line", "data-line": i },
      el("h3", { class: "source", text: label + src }), grid));
    return cards;
  });
}

function fill(view, m, result) {
  result.lines.forEach((line, i) => {
    const card = view.lines[i] && view.lines[i][m.name];
    if (!card || !line) return;
    card.replaceChildren(
      el("div", { class: "card-head" }, el("b", {}, swatch(m.name), m.name), el("span", { class: "family", text: m.family })),
      hypTable(result, line));
    if (line.uncovered) {
      card.append(el("div", { class: "cut", text: "the source has characters this model cannot spell (read as <unk>)" }));
    }
    if (line.beam && line.beam.n_best.length > 1) card.append(nbestList(line.beam.n_best));
    card.append(attentionView(m, line));
    card.dataset.state = "done";
  });
}

function hypTable(result, line) {
  const table = el("table", { class: "hyps" });
  const row = (cls, label, hyp, ms) => {
    const text = el("td", { class: "text" }, el("span", { class: "hyp", text: hyp.text }));
    if (!hyp.finished) text.append(el("span", { class: "cut", text: " (cut at the length limit)" }));
    table.append(el("tr", { class: cls }, el("th", { text: label }), text,
      el("td", { class: "num", text: `log p ${num(hyp.log_prob)}`, title: `score ${num(hyp.score, 4)}` }),
      el("td", { class: "num", text: `${num(ms, 0)} ms` })));
  };
  row("greedy", "greedy", line.greedy, result.greedy_ms);
  if (line.beam) row("beam", `beam ${result.beam}`, line.beam, result.beam_ms);
  return table;
}

function nbestList(hyps) {
  const list = el("ol");
  for (const h of hyps) {
    list.append(el("li", {}, el("span", { text: h.text }),
      el("span", { class: "num", text: `log p ${num(h.log_prob)} · score ${num(h.score)}` })));
  }
  return el("details", { class: "nbest" }, el("summary", { text: `n-best (${hyps.length})` }), list);
}

function attentionView(m, line) {
  if (!m.attention) {
    return el("div", { class: "no-attention", text: "fixed-vector model: no attention to show (the decoder sees only the final encoder state)" });
  }
  const hypSel = el("select", { class: "att-hyp" });
  if (line.beam) hypSel.append(el("option", { value: "beam", text: "beam" }));
  hypSel.append(el("option", { value: "greedy", text: "greedy" }));
  const layerSel = el("select", { class: "att-layer" });
  for (let l = 0; l < m.layers; l++) layerSel.append(el("option", { value: l, text: `layer ${l + 1}` }));
  layerSel.value = m.layers - 1;
  const headSel = el("select", { class: "att-head" }, el("option", { value: "mean", text: "mean of heads" }));
  for (let h = 0; h < m.heads; h++) headSel.append(el("option", { value: h, text: `head ${h + 1}` }));
  const controls = el("div", { class: "att-controls" }, el("span", { class: "muted", text: "cross-attention" }),
    el("label", {}, "of ", hypSel));
  if (m.layers * m.heads > 1) controls.append(layerSel, headSel);
  const wrap = el("div", { class: "heatmap-wrap" });
  const draw = () => {
    const hyp = line[hypSel.value];
    wrap.replaceChildren(heatmap(line.source_pieces, hyp.pieces,
      headRows(hyp.attention, Number(layerSel.value), headSel.value)));
  };
  for (const s of [hypSel, layerSel, headSel]) s.addEventListener("change", draw);
  draw();
  return el("div", { class: "attention" }, controls, wrap);
}

function headRows(maps, layer, head) {
  // maps: L x H x T x S; one head's T x S rows, or their mean over heads
  const heads = maps[layer];
  if (head !== "mean") return heads[Number(head)];
  return heads[0].map((row, t) => row.map((_, j) => heads.reduce((s, h) => s + h[t][j], 0) / heads.length));
}

function heatmap(srcPieces, tgtPieces, rows) {
  // cells shrink (18 to 12 px) so that a long source and the colour bar still fit a card
  const cell = Math.max(12, Math.min(18, Math.floor(290 / srcPieces.length)));
  const readout = el("div", { class: "att-readout muted", text: "hover a cell for its weight" });
  const grid = el("div", { class: "heatmap" });
  grid.style.setProperty("--cell", `${cell}px`);
  grid.style.gridTemplateColumns = `auto repeat(${srcPieces.length}, ${cell}px)`;
  grid.append(el("div"));
  const srcCells = srcPieces.map((p, j) => el("div", { class: "src-piece", "data-col": j, text: p }));
  grid.append(...srcCells);
  const cellRows = rows.map((row, t) => {
    const label = el("div", { class: "tgt-piece", "data-row": t, text: tgtPieces[t] });
    const cells = row.map((w, j) => {
      const words = `target ${tgtPieces[t]} · source ${srcPieces[j]} · weight ${w.toFixed(3)}`;
      const c = el("div", { class: "cell", title: words, "data-row": t, "data-col": j, "data-weight": w });
      c.style.background = `rgba(var(--heat), ${Math.min(1, w).toFixed(3)})`;
      c.addEventListener("mouseenter", () => { readout.textContent = words; });
      return c;
    });
    grid.append(label, ...cells);
    return { label, cells };
  });
  const light = (t) => {
    // the source pieces that hold at least half of the row's largest weight light up
    const max = Math.max(...rows[t]);
    cellRows.forEach((r, u) => {
      r.label.classList.toggle("active", u === t);
      r.cells.forEach((c) => c.classList.toggle("active", u === t));
    });
    srcCells.forEach((c, j) => c.classList.toggle("hl", t !== null && rows[t][j] >= 0.5 * max));
  };
  cellRows.forEach((r, t) => {
    for (const node of [r.label, ...r.cells]) node.addEventListener("mouseenter", () => light(t));
  });
  grid.addEventListener("mouseleave", () => {
    cellRows.forEach((r) => { r.label.classList.remove("active"); r.cells.forEach((c) => c.classList.remove("active")); });
    srcCells.forEach((c) => c.classList.remove("hl"));
  });
  const scale = colorBar(Math.max(90, rows.length * (cell + 1) - 1));
  return el("div", { class: "heatmap-figure" }, el("div", { class: "heatmap-row" }, grid, scale), readout);
}

function colorBar(height) {
  // a cell's colour is the heat colour at opacity = its weight, over white: so is this bar's
  const ticks = el("div", { class: "ticks" }, ...["1", "0.5", "0"].map((t) => el("span", { text: t })));
  const scale = el("div", { class: "colorbar", title: "attention weight, 0 to 1" },
    el("div", { class: "bar" }), ticks, el("div", { class: "label", text: "attention weight" }));
  scale.style.height = `${height}px`;
  return scale;
}

// ---- the study: BLEU (or exact match) against source length, one line per model ----

async function openStudy() {
  const section = $("#study");
  section.hidden = false;
  const study = await (await fetch("/study")).json();
  study.models.forEach((m) => styleOf(m.name));  // every model, so no decode recolours one
  $("#study-budget").textContent = [study.budget, study.machine].filter(Boolean).join(" · ");
  $("#study-findings").textContent = study.findings || "";
  const mode = $("#study-mode");
  mode.replaceChildren(...study.modes.map((m) => el("option", { value: m, text: m })));
  mode.value = study.modes.includes("beam5") ? "beam5" : study.modes[0];
  const metric = $("#study-metric");
  metric.replaceChildren(el("option", { value: "bleu", text: "BLEU" }));
  if (study.exact_match) metric.append(el("option", { value: "exact", text: "exact match %" }));
  const hidden = new Set();
  const draw = () => drawStudy(study, mode.value, metric.value, hidden, draw);
  mode.onchange = metric.onchange = draw;
  draw();
  section.scrollIntoView({ behavior: "smooth" });
}

function drawStudy(study, mode, metric, hidden, redraw) {
  const NS = "http://www.w3.org/2000/svg";
  const svgEl = (tag, attrs = {}, text) => {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    return n;
  };
  const models = study.models.filter((m) => m.decodes[mode]);
  const buckets = [...new Set(models.flatMap((m) => m.decodes[mode].by_length.map((r) => r.bucket)))];
  const W = 900, H = 380, L = 56, R = 240, T = 16, B = 44;
  const values = models.flatMap((m) => m.decodes[mode].by_length.map((r) => r[metric])).filter((v) => v !== null);
  const top = Math.max(10, Math.ceil(Math.max(0, ...values) / 10) * 10);
  const x = (i) => L + (buckets.length < 2 ? 0 : (i * (W - L - R)) / (buckets.length - 1));
  const y = (v) => T + (H - T - B) * (1 - v / top);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img" });
  for (let v = 0; v <= top; v += top / 5) {
    svg.append(svgEl("line", { class: "grid", x1: L, x2: W - R, y1: y(v), y2: y(v) }),
      svgEl("text", { x: L - 8, y: y(v) + 4, "text-anchor": "end", "font-size": 12 }, v.toFixed(0)));
  }
  svg.append(svgEl("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  buckets.forEach((b, i) => svg.append(svgEl("text", { x: x(i), y: H - B + 18, "text-anchor": "middle", "font-size": 12 }, b)));
  svg.append(svgEl("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", "font-size": 12 }, "source length (words)"),
    svgEl("text", { x: 14, y: (T + H - B) / 2, "font-size": 12, transform: `rotate(-90 14 ${(T + H - B) / 2})`, "text-anchor": "middle" },
      metric === "bleu" ? "BLEU" : "exact match %"));
  const legend = svgEl("g", { class: "legend" });
  models.forEach((m, k) => {
    const { color, dash } = styleOf(m.name);
    const rows = m.decodes[mode].by_length;
    const pts = rows.map((r) => [buckets.indexOf(r.bucket), r[metric], r]).filter((p) => p[1] !== null);
    if (!hidden.has(m.name)) {
      svg.append(svgEl("polyline", { fill: "none", stroke: color, "stroke-width": 2, "stroke-dasharray": dash,
        "data-model": m.name, points: pts.map(([i, v]) => `${x(i)},${y(v)}`).join(" ") }));
      for (const [i, v, r] of pts) {
        const dot = svgEl("circle", { cx: x(i), cy: y(v), r: 4.5, fill: color, "data-model": m.name, "data-bucket": r.bucket });
        const words = `${m.name}, ${r.bucket} words: ${metric === "bleu" ? "BLEU" : "exact match"} ${v.toFixed(1)} (${r.sentences} sentences)`;
        dot.append(svgEl("title", {}, words));
        dot.addEventListener("mouseenter", () => { $("#study-hover").textContent = words; });
        svg.append(dot);
      }
    }
    const item = svgEl("g", { class: hidden.has(m.name) ? "off" : "", transform: `translate(${W - R + 16} ${T + 18 * k})` });
    item.append(svgEl("line", { x1: 0, x2: 22, y1: -4, y2: -4, stroke: color, "stroke-width": 2, "stroke-dasharray": dash }),
      svgEl("circle", { cx: 11, cy: -4, r: 4, fill: color }),
      svgEl("text", { x: 28, "font-size": 12 }, m.name), svgEl("title", {}, m.family || ""));
    item.addEventListener("click", () => { hidden.has(m.name) ? hidden.delete(m.name) : hidden.add(m.name); redraw(); });
    legend.append(item);
  });
  svg.append(legend);
  $("#study-plot").replaceChildren(svg);
}

init().catch((e) => {
  $("#subtitle").textContent = `cannot reach the server: ${e.message}`;
  document.body.dataset.state = "error";
});
