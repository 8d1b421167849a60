// perflab serve: the behaviour of its pages, shipped as a file so the Content-Security-Policy
// can forbid inline script. Everything user-supplied is put into the page with textContent
// (never innerHTML), so a workload, a transaction name or an error message is always text.
//
// One unit convention, the registry's (perflab.catalog.registry), as every report prints it:
// response times in seconds, rates per second, utilizations in %, each with the registry's
// decimals and at least two significant digits below 1 (perflab.report.numbers.fixed). The
// server hands the units and decimals to the page (data-units), so nothing here guesses them.
"use strict";

const DASH = "\u2013";
const NA = "na";

// -- numbers, printed as perflab.report.numbers prints them ------------------------------------
function fixed(x, decimals, significant) {
  if (x === null || x === undefined || !isFinite(x)) return NA;
  let value = Number(x), places = decimals;
  if (value !== 0 && Math.abs(value) < 1) {
    places = Math.max(places, Math.min(12, (significant || 1) - 1 - Math.floor(Math.log10(Math.abs(value)))));
  }
  if (places < 0) {
    const unit = Math.pow(10, -places), q = value / unit;
    let r = Math.round(q);
    if (Math.abs(q % 1) === 0.5 && r % 2 !== 0) r -= 1;        // a tie: to even, as Python rounds
    value = r * unit;
    places = 0;
  }
  let text = toFixedEven(value, places);
  const negative = text.startsWith("-");
  let [whole, fraction] = (negative ? text.slice(1) : text).split(".");
  whole = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  text = (negative ? "-" : "") + whole + (fraction !== undefined ? "." + fraction : "");
  if (text.replace(/[-+0.,]/g, "") === "") text = (0).toFixed(places);
  return text;
}

// Number.toFixed, except that an exact tie (the value's binary expansion ends in a 5 just past
// the last place kept) rounds to the even digit, as Python's format does: 104.625 -> "104.62".
function toFixedEven(value, places) {
  const text = value.toFixed(places);
  const exact = Math.abs(value).toFixed(100);
  const dot = exact.indexOf(".");
  if (dot < 0 || !/^50*$/.test(exact.slice(dot + 1 + places))) return text;
  const kept = exact.slice(0, dot + 1 + places).replace(/\.$/, "");
  if (Number(kept.slice(-1)) % 2 !== 0) return text;          // toFixed rounded away from zero: to even
  return (value < 0 ? "-" : "") + kept;
}

// A metric's value with the registry's decimals; `withUnit` adds its unit ("0.012 s", "45.10%").
function metric(units, key, x, withUnit) {
  const u = units[key] || {decimals: 3, unit: ""};
  const text = fixed(x, u.decimals, 2);
  if (!withUnit || text === NA || !u.unit) return text;
  return u.unit === "%" ? text + "%" : text + " " + u.unit;
}

function number(x, digits) {
  return x === null || x === undefined || !isFinite(x) ? DASH : Number(x).toFixed(digits);
}

function unitsOf(element) {
  try { return JSON.parse(element.dataset.units || "{}"); } catch (e) { return {}; }
}

// A page reloads when what it shows changed on the server; never more than once in 3 s, so a
// store that changes all the time cannot keep a browser reloading.
function reloadSoon() {
  const last = Number(sessionStorage.getItem("perflab-reload") || 0);
  if (Date.now() - last < 3000) return;
  sessionStorage.setItem("perflab-reload", String(Date.now()));
  location.reload();
}

function setField(root, name, text) {
  for (const el of root.querySelectorAll('[data-field="' + name + '"]')) el.textContent = text;
}

function bump(element) {
  element.dataset.updates = String(Number(element.dataset.updates || 0) + 1);
}

// -- time charts: hand-written SVG with axes, the measurement window shaded, values on hover ----
const SVG = "http://www.w3.org/2000/svg";
const COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"];
const BOX = {width: 720, height: 240, left: 66, right: 14, top: 30, bottom: 40};

function svgEl(parent, name, attrs, text) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  parent.appendChild(el);
  return el;
}

// Round steps (1, 2, 2.5, 5 x 10^k) for about `count` ticks over [lo, hi].
function niceTicks(lo, hi, count) {
  if (!(hi > lo)) hi = lo + 1;
  const raw = (hi - lo) / count, magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map(m => m * magnitude).find(s => s >= raw * (1 - 1e-9));
  const ticks = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) ticks.push(Number((k * step).toPrecision(12)));
  let digits = 0;
  while (digits < 12 && Math.abs(Math.round(step * Math.pow(10, digits)) - step * Math.pow(10, digits)) > 1e-6) digits++;
  return {step, ticks, digits};
}

// The point of `points` (sorted by x) nearest to x, or null.
function nearest(points, x) {
  let best = null;
  for (const p of points) {
    if (p[1] === null || p[1] === undefined || !isFinite(p[1])) continue;
    if (best === null || Math.abs(p[0] - x) < Math.abs(best[0] - x)) best = p;
  }
  return best;
}

// spec: {series: [{name, points: [[x, y|null]...], colour, dash}], window: [start, end] or null,
//        xMin, xMax, xLabel, yLabel, format(y) -> text, xTitle(x) -> text, empty}
function timeChart(svg, spec) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const {width, height, left, right, top, bottom} = BOX;
  const plotW = width - left - right, plotH = height - top - bottom;
  const measured = spec.series.flatMap(s => s.points.filter(p => p[1] !== null && p[1] !== undefined && isFinite(p[1])));
  if (!measured.length) {
    svgEl(svg, "text", {x: left, y: top + 20, class: "empty"}, spec.empty || "nothing measured yet");
    svg.dataset.drawn = "0";
    return;
  }
  const xs = measured.map(p => p[0]);
  if (spec.window) xs.push(spec.window[0], spec.window[1]);
  if (spec.xMin !== undefined) xs.push(spec.xMin);
  if (spec.xMax !== undefined) xs.push(spec.xMax);
  const x0 = Math.min(...xs);
  let x1 = Math.max(...xs);
  if (x1 <= x0) x1 = x0 + 1;
  let yMax = Math.max(...measured.map(p => p[1]));
  if (!(yMax > 0)) yMax = 1;
  const yTicks = niceTicks(0, yMax * 1.05, 4);
  const y1 = Math.max(yTicks.ticks[yTicks.ticks.length - 1], yMax);
  const X = x => left + plotW * (x - x0) / (x1 - x0);
  const Y = y => top + plotH * (1 - y / y1);

  if (spec.window) {
    const a = Math.max(x0, spec.window[0]), b = Math.min(x1, spec.window[1]);
    if (b > a) {
      svgEl(svg, "rect", {x: X(a), y: top, width: X(b) - X(a), height: plotH, class: "window"});
      svgEl(svg, "text", {x: X(a) + 4, y: top + 11, class: "window-label"}, "measurement window");
    }
  }
  for (const t of yTicks.ticks) {
    svgEl(svg, "line", {x1: left, x2: width - right, y1: Y(t), y2: Y(t), class: "grid"});
    svgEl(svg, "text", {x: left - 6, y: Y(t) + 3, class: "tick y"}, fixed(t, yTicks.digits, 1));
  }
  const xTicks = niceTicks(x0, x1, 8);
  for (const t of xTicks.ticks) {
    if (t < x0 - 1e-9 || t > x1 + 1e-9) continue;
    svgEl(svg, "line", {x1: X(t), x2: X(t), y1: top + plotH, y2: top + plotH + 4, class: "axis"});
    svgEl(svg, "text", {x: X(t), y: top + plotH + 15, class: "tick x"}, fixed(t, xTicks.digits, 1));
  }
  svgEl(svg, "line", {x1: left, x2: width - right, y1: top + plotH, y2: top + plotH, class: "axis"});
  svgEl(svg, "line", {x1: left, x2: left, y1: top, y2: top + plotH, class: "axis"});
  svgEl(svg, "text", {x: left + plotW / 2, y: height - 6, class: "axis-label x"}, spec.xLabel || "");
  svgEl(svg, "text", {x: 12, y: top + plotH / 2, class: "axis-label y",
                      transform: "rotate(-90 12 " + (top + plotH / 2) + ")"}, spec.yLabel || "");

  let legendX = left;
  spec.series.forEach((s, i) => {
    const colour = s.colour || COLOURS[i % COLOURS.length];
    let segment = [];
    const flush = () => {
      if (segment.length === 1) svgEl(svg, "circle", {cx: segment[0][0], cy: segment[0][1], r: 2, fill: colour, class: "dot"});
      else if (segment.length > 1) {
        svgEl(svg, "polyline", {points: segment.map(p => p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" "),
                                class: "line", stroke: colour, "stroke-dasharray": s.dash || "none",
                                "data-series": s.name});
      }
      segment = [];
    };
    for (const p of s.points) {
      if (p[1] === null || p[1] === undefined || !isFinite(p[1])) flush();
      else segment.push([X(p[0]), Y(p[1])]);
    }
    flush();
    svgEl(svg, "rect", {x: legendX, y: 6, width: 12, height: 4, fill: colour, class: "swatch"});
    svgEl(svg, "text", {x: legendX + 16, y: 12, class: "legend"}, s.name);
    legendX += 28 + 6.2 * s.name.length;
  });

  // hover: a rule at the nearest interval and each series' value there
  const rule = svgEl(svg, "line", {y1: top, y2: top + plotH, class: "rule", visibility: "hidden"});
  const tip = svgEl(svg, "g", {class: "tip", visibility: "hidden"});
  const area = svgEl(svg, "rect", {x: left, y: top, width: plotW, height: plotH, class: "hover-area"});
  const show = (dataX) => {
    while (tip.firstChild) tip.removeChild(tip.firstChild);
    const first = spec.series.map(s => nearest(s.points, dataX)).find(p => p !== null);
    if (!first) return;
    const at = first[0];
    const lines = [spec.xTitle ? spec.xTitle(at) : fixed(at, 1, 1)];
    spec.series.forEach((s, i) => {
      const p = nearest(s.points, dataX);
      lines.push(s.name + ": " + (p === null ? NA : spec.format(p[1])));
      if (p !== null) svgEl(tip, "circle", {cx: X(p[0]), cy: Y(p[1]), r: 3, fill: s.colour || COLOURS[i % COLOURS.length]});
    });
    rule.setAttribute("x1", X(at));
    rule.setAttribute("x2", X(at));
    rule.setAttribute("visibility", "visible");
    const box = svgEl(tip, "rect", {class: "tip-box", rx: 3});
    const texts = lines.map((line, i) => svgEl(tip, "text", {y: top + 14 + 13 * i, class: i ? "tip-line" : "tip-head"}, line));
    const textWidth = Math.max(...texts.map(t => t.getComputedTextLength ? t.getComputedTextLength() : 6 * t.textContent.length));
    let tx = X(at) + 10;
    if (tx + textWidth + 12 > width - right) tx = X(at) - textWidth - 22;
    for (const t of texts) t.setAttribute("x", tx + 6);
    box.setAttribute("x", tx);
    box.setAttribute("y", top + 2);
    box.setAttribute("width", textWidth + 12);
    box.setAttribute("height", 13 * lines.length + 6);
    tip.setAttribute("visibility", "visible");
    tip.dataset.x = String(at);
    svg.dataset.hoverX = String(dataX);
  };
  const toData = (event) => {
    const point = svg.createSVGPoint();
    point.x = event.clientX;
    point.y = event.clientY;
    const local = point.matrixTransform(svg.getScreenCTM().inverse());
    return x0 + (local.x - left) / plotW * (x1 - x0);
  };
  area.addEventListener("mousemove", (event) => show(toData(event)));
  area.addEventListener("mouseleave", () => {
    rule.setAttribute("visibility", "hidden");
    tip.setAttribute("visibility", "hidden");
    delete svg.dataset.hoverX;
  });
  // a chart redrawn under the pointer (the live charts, each second) keeps its tooltip
  if (svg.dataset.hoverX !== undefined) show(Number(svg.dataset.hoverX));
  svg.dataset.drawn = "1";
  svg.dataset.series = String(spec.series.length);
}

function chartsIn(root) {
  const out = {};
  for (const svg of root.querySelectorAll("svg[data-chart]")) out[svg.dataset.chart] = svg;
  return out;
}

// -- a stored run: its charts (every interval of the run) ----------------------------------------
function intervalCharts(section, data, units) {
  const rows = data.intervals || [];
  const mid = r => (r.t_start + r.t_end) / 2;
  const series = (key, i, value) => ({name: (units[key] || {label: key}).label, colour: COLOURS[i],
                                      points: rows.map(r => [mid(r), value ? value(r) : r[key]])});
  const window = data.window ? [data.window.start, data.window.end] : null;
  const title = (x) => {
    const r = rows.find(row => mid(row) === x);
    if (!r) return fixed(x, 1, 1) + " s after t0";
    return fixed(r.t_start, 1, 1) + DASH + fixed(r.t_end, 1, 1) + " s after t0" + (r.in_window ? ", in the window" : "");
  };
  const perSecond = r => r.errors_t === null ? null : r.errors_t / Math.max(1e-9, r.t_end - r.t_start);
  const charts = chartsIn(section);
  const common = {window, xMin: 0, xLabel: "seconds after t0", xTitle: title, empty: "no intervals measured"};
  timeChart(charts.throughput, {...common, yLabel: "tx/s",
    series: [series("etr_t", 0), {...series("errors_t", 1, perSecond), name: "errors/s"}],
    format: y => metric(units, "etr_t", y, true)});
  timeChart(charts.response, {...common, yLabel: "response (s)",
    series: ["avg_last_t", "resp_p50_t", "resp_p90_t", "resp_p99_t"].map((k, i) => series(k, i)),
    format: y => metric(units, "avg_last_t", y, true)});
  timeChart(charts.util, {...common, yLabel: "% busy per processor",
    series: [series("util_proc_s", 2), series("util_proc_h", 3)], format: y => metric(units, "util_proc_s", y, true)});
}

async function runCharts() {
  const section = document.getElementById("charts-view");
  if (!section) return;
  const units = unitsOf(section);
  try {
    const response = await fetch(section.dataset.src, {credentials: "same-origin"});
    if (!response.ok) throw new Error("HTTP " + response.status);
    intervalCharts(section, await response.json(), units);
    section.dataset.loaded = "1";
  } catch (error) {
    const note = document.createElement("p");
    note.className = "error";
    note.textContent = "The charts could not be loaded: " + error.message;
    section.appendChild(note);
  }
}

// -- tables filled by the script (the live panel's) ----------------------------------------------
function fillTable(table, rows, emptyText) {
  const body = table.tBodies[0];
  while (body.firstChild) body.removeChild(body.firstChild);
  if (!rows.length) {
    const tr = body.insertRow();
    tr.className = "empty";
    const td = tr.insertCell();
    td.colSpan = table.tHead.rows[0].cells.length;
    td.textContent = emptyText;
    return;
  }
  for (const cells of rows) {
    const tr = body.insertRow();
    cells.forEach((cell, i) => {
      const td = document.createElement(i === 0 && cell.head ? "th" : "td");
      if (i === 0 && cell.head) td.scope = "row";
      td.textContent = cell.text;
      if (cell.className) td.className = cell.className;
      tr.appendChild(td);
    });
    if (cells[0] && cells[0].name !== undefined) tr.dataset.name = cells[0].name;
  }
}

// -- the live panel of a run in progress ---------------------------------------------------
function liveCharts(panel, live, units) {
  const history = live.history || [];
  const window = [live.window_start_s, live.window_end_s];
  const series = (key, i, name, value) => ({name: name || (units[key] || {label: key}).label, colour: COLOURS[i],
                                            points: history.map(p => [p.elapsed_s, value ? value(p) : p[key]])});
  const common = {window, xMin: 0, xMax: Math.max(live.window_end_s, live.elapsed_s), xLabel: "seconds after t0",
                  xTitle: x => fixed(x, 0, 1) + " s after t0", empty: "a line from the second second on"};
  const perSecond = p => p.span_s ? p.errors / p.span_s : null;
  const charts = chartsIn(panel);
  timeChart(charts.throughput, {...common, yLabel: "tx/s",
    series: [series("etr_t", 0), series("errors_t", 1, "errors/s", perSecond)], format: y => metric(units, "etr_t", y, true)});
  timeChart(charts.response, {...common, yLabel: "response (s)",
    series: ["avg_last_t", "resp_p50_t", "resp_p90_t", "resp_p99_t"].map((k, i) => series(k, i)),
    format: y => metric(units, "avg_last_t", y, true)});
  timeChart(charts.util, {...common, yLabel: "%",
    series: [series("util_proc_s", 2), series("driver_cpu", 3, "DRIVER CPU", p => p.driver_cpu_pct)],
    format: y => metric(units, "util_proc_s", y, true)});
}

function showLive(panel, live) {
  const note = panel.querySelector('[data-field="note"]');
  if (!live) {
    note.textContent = "No live data yet: this run's driver has not written live.json.";
    return;
  }
  const units = unitsOf(panel);
  setField(panel, "phase", live.phase);
  setField(panel, "elapsed", number(live.elapsed_s, 0) + " s");
  setField(panel, "time_left", number(live.time_left_s, 0) + " s");
  setField(panel, "etr_t", metric(units, "etr_t", live.etr_t, true));
  setField(panel, "avg_last_t", metric(units, "avg_last_t", live.avg_last_t, true));
  setField(panel, "resp_p90_t", metric(units, "resp_p90_t", live.resp_p90_t, true));
  setField(panel, "util_proc_s", metric(units, "util_proc_s", live.util_proc_s, true));
  setField(panel, "driver_cpu_pct", metric(units, "driver_cpu", live.driver_cpu_pct, true));
  setField(panel, "tx_completed", fixed(live.tx_completed, 0));
  setField(panel, "errors", fixed(live.errors, 0));
  setField(panel, "age", number(live.age_s, 0) + " s ago");
  const progress = panel.querySelector('[data-field="progress"]');
  if (progress && live.window_end_s > 0) progress.value = Math.min(1, live.elapsed_s / live.window_end_s);
  const stale = live.age_s > 5;
  panel.classList.toggle("stale", stale);
  note.textContent = stale ? "No update for " + number(live.age_s, 0) + " s: the driver may be busy or gone." : "";
  const lastError = panel.querySelector(".last-error");
  if (live.last_error) {
    lastError.hidden = false;
    setField(lastError, "last_error", live.last_error);
  }
  liveCharts(panel, live, units);
  const txTable = panel.querySelector("#live-transactions-table");
  if (txTable) {
    const keys = (txTable.dataset.keys || "").split(",");
    fillTable(txTable, (live.transactions || []).map(row => [{text: row.name, head: true, name: row.name},
      ...keys.map(k => ({text: metric(units, k, row[k], false), className: "num"}))]), "No transaction completed yet.");
  }
  const errorTable = panel.querySelector("#live-errors-table");
  if (errorTable) {
    fillTable(errorTable, (live.error_messages || []).map(e => [{text: e.message, className: "message"},
      {text: e.transaction}, {text: fixed(e.count, 0), className: "num"}]), "No transaction failed yet.");
  }
  bump(panel);
}

function follow(url, handlers) {
  const source = new EventSource(url);
  for (const [event, handle] of Object.entries(handlers)) {
    source.addEventListener(event, (e) => handle(JSON.parse(e.data), source));
  }
  return source;
}

function liveRunPage() {
  const panel = document.getElementById("live");
  if (!panel || !panel.dataset.events) return;
  follow(panel.dataset.events, {
    live: (data) => showLive(panel, data.live),
    end: (data, source) => { source.close(); setField(panel, "phase", data.status); location.reload(); },
  });
}

function liveStudyPage() {
  const box = document.getElementById("study-live");
  if (!box) return;
  const panel = document.getElementById("live");
  follow(box.dataset.events, {
    study: (data) => {
      const current = data.current ? data.current.run_id : "";
      const shown = panel ? panel.dataset.run : "";
      if (String(data.done) !== box.dataset.done || current !== shown) { reloadSoon(); return; }
      if (panel && data.current) showLive(panel, data.current.live);
    },
    end: (data, source) => { source.close(); location.reload(); },
  });
}

function liveList(id, event) {
  const list = document.getElementById(id);
  if (!list) return;
  follow(list.dataset.events, {
    [event]: (data) => {
      if (data.version !== list.dataset.version) { reloadSoon(); return; }
      for (const [runId, live] of Object.entries(data.live || {})) {
        const row = list.querySelector('tr[data-run="' + CSS.escape(runId) + '"]');
        if (!row || !live) continue;
        const cell = (name) => row.querySelector('[data-live-field="' + name + '"]');
        cell("phase").textContent = live.phase;
        cell("etr_t").textContent = live.etr_t === null ? DASH : fixed(live.etr_t, 1) + " tx/s";
        cell("time_left").textContent = number(live.time_left_s, 0) + " s left";
      }
      bump(list);
    },
  });
}

// -- compare: the runs of both groups overlaid, aligned on their windows' starts ------------------
async function compareOverlay() {
  const section = document.getElementById("overlay");
  if (!section) return;
  const units = unitsOf(section);
  let data;
  try {
    const response = await fetch(section.dataset.src, {credentials: "same-origin"});
    if (!response.ok) throw new Error("HTTP " + response.status);
    data = await response.json();
  } catch (error) {
    const note = document.createElement("p");
    note.className = "error";
    note.textContent = "The runs' series could not be loaded: " + error.message;
    section.appendChild(note);
    return;
  }
  const series = [];
  let longest = 0;
  data.groups.forEach((group, g) => {
    group.runs.forEach((run, r) => {
      const rows = run.intervals || [];
      if (!rows.length) return;
      const start = rows[0].t_start;
      longest = Math.max(longest, rows[rows.length - 1].t_end - start);
      series.push({name: (g ? "B" : "A") + ": " + run.run_id + (run.excluded ? " (excluded)" : ""),
                   colour: COLOURS[g % COLOURS.length], dash: r ? "4 3" : "none",
                   rows: rows.map(row => ({x: (row.t_start + row.t_end) / 2 - start, row}))});
    });
  });
  const charts = chartsIn(section);
  const common = {window: longest > 0 ? [0, longest] : null, xMin: 0, xLabel: "seconds after the window's start",
                  xTitle: x => fixed(x, 1, 1) + " s after the window's start", empty: "no per-interval data in these runs"};
  const draw = (svg, key, yLabel) => timeChart(svg, {...common, yLabel,
    series: series.map(s => ({name: s.name, colour: s.colour, dash: s.dash, points: s.rows.map(p => [p.x, p.row[key]])})),
    format: y => metric(units, key, y, true)});
  draw(charts.throughput, "etr_t", "ETR (T), tx/s");
  draw(charts.response, "resp_p90_t", "RESP P90 (T), s");
  draw(charts.util, "util_proc_s", "UTIL/PROC (S), %");
  section.dataset.loaded = "1";
}

// -- reports in frames: as tall as their content, so the page scrolls, not the frame -------------
function sizeFrames() {
  for (const frame of document.querySelectorAll("iframe.report")) {
    const fit = () => {
      try {
        const doc = frame.contentDocument;
        if (!doc || !doc.documentElement || doc.URL === "about:blank") return;
        frame.style.height = (doc.documentElement.scrollHeight + 24) + "px";
        frame.dataset.loaded = "1";
        // a folded group opened in the report makes it taller
        doc.addEventListener("toggle", fit, true);
      } catch (e) { /* another origin: keep the default height */ }
    };
    frame.addEventListener("load", fit);
    if (frame.contentDocument && frame.contentDocument.readyState === "complete") fit();  // loaded already
  }
}

document.addEventListener("DOMContentLoaded", () => {
  sizeFrames();
  liveRunPage();
  liveStudyPage();
  liveList("runs-list", "runs");
  liveList("studies-list", "studies");
  runCharts();
  compareOverlay();
});
