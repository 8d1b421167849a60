// perflab serve: the behaviour of its pages, shipped as a file so the Content-Security-Policy
// can forbid inline script. Everything user-supplied is put into the page with textContent
// (never innerHTML), so a workload or an error message is always shown as text.
"use strict";

const DASH = "\u2013";

function number(x, digits) {
  return x === null || x === undefined || !isFinite(x) ? DASH : Number(x).toFixed(digits);
}
function rate(x) { return x === null || x === undefined ? DASH : number(x, 1) + " tx/s"; }
function seconds(x) {
  if (x === null || x === undefined) return DASH;
  return x < 1 ? number(x * 1000, x < 0.01 ? 3 : 2) + " ms" : number(x, 3) + " s";
}
function percent(x) { return x === null || x === undefined ? DASH : number(x, 1) + "%"; }

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

// -- live charts: small SVG line charts of the history in live.json ---------------------------
const SVG = "http://www.w3.org/2000/svg";

function drawChart(svg, points, keys, scale) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const width = 300, height = 80, pad = 4;
  const xs = points.map(p => p.elapsed_s);
  let top = 0;
  for (const p of points) for (const k of keys) if (p[k] !== null && p[k] !== undefined) top = Math.max(top, p[k] * scale);
  if (points.length < 2 || top <= 0) {
    const wait = document.createElementNS(SVG, "text");
    wait.setAttribute("x", "4");
    wait.setAttribute("y", "10");
    wait.textContent = "a line from the second second on";
    svg.appendChild(wait);
    return;
  }
  const x0 = xs[0], x1 = xs[xs.length - 1] > x0 ? xs[xs.length - 1] : x0 + 1;
  keys.forEach((k, i) => {
    const coords = [];
    for (const p of points) {
      if (p[k] === null || p[k] === undefined) continue;
      const x = pad + (width - 2 * pad) * (p.elapsed_s - x0) / (x1 - x0);
      const y = height - pad - (height - 2 * pad - 10) * (p[k] * scale) / (top * 1.05);
      coords.push(x.toFixed(1) + "," + y.toFixed(1));
    }
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", coords.join(" "));
    line.setAttribute("class", i === 0 ? "a" : "b");
    svg.appendChild(line);
  });
  const label = document.createElementNS(SVG, "text");
  label.setAttribute("x", "4");
  label.setAttribute("y", "10");
  label.textContent = "max " + number(top, top < 10 ? 2 : 0);
  svg.appendChild(label);
}

// -- the live panel of a run in progress ---------------------------------------------------
function showLive(panel, live) {
  const note = panel.querySelector('[data-field="note"]');
  if (!live) {
    note.textContent = "No live data yet: this run's driver has not written live.json.";
    return;
  }
  setField(panel, "phase", live.phase);
  setField(panel, "elapsed", number(live.elapsed_s, 0) + " s");
  setField(panel, "time_left", number(live.time_left_s, 0) + " s");
  setField(panel, "etr_t", rate(live.etr_t));
  setField(panel, "avg_last_t", seconds(live.avg_last_t));
  setField(panel, "resp_p90_t", seconds(live.resp_p90_t));
  setField(panel, "util_proc_s", percent(live.util_proc_s));
  setField(panel, "driver_cpu_pct", percent(live.driver_cpu_pct));
  setField(panel, "tx_completed", String(live.tx_completed));
  setField(panel, "errors", String(live.errors));
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
  const history = live.history || [];
  const charts = {etr_t: [["etr_t"], 1], response: [["avg_last_t", "resp_p90_t"], 1000],
                  util: [["util_proc_s", "driver_cpu_pct"], 1]};
  for (const svg of panel.querySelectorAll("svg[data-chart]")) {
    const [keys, scale] = charts[svg.dataset.chart];
    drawChart(svg, history, keys, scale);
  }
  panel.dataset.updates = String(Number(panel.dataset.updates || 0) + 1);
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
        cell("etr_t").textContent = rate(live.etr_t);
        cell("time_left").textContent = number(live.time_left_s, 0) + " s left";
      }
      list.dataset.updates = String(Number(list.dataset.updates || 0) + 1);
    },
  });
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
});
