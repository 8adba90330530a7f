// seda's live dashboard: polls /_seda/live once a second and draws it. No dependencies.
"use strict";

const HOUR = 3600;        // points kept per stage, as on the server
const SPARK = 300;        // seconds shown in a card's sparklines
const history = new Map(); // stage name -> {keys, points[]}
let newest = null;
let failures = 0;

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, text) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmtRate(v) { return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2); }
function fmtTime(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "-";
  return s >= 1 ? s.toFixed(2) + " s" : s >= 0.001 ? (s * 1e3).toFixed(1) + " ms" : (s * 1e6).toFixed(0) + " us";
}

async function poll() {
  const url = newest === null ? "/_seda/live" : "/_seda/live?since=" + newest;
  try {
    const r = await fetch(url, { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const live = await r.json();
    merge(live);
    if (live.now && live.now.stages) draw(live.now);
    failures = 0;
    $("status").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    failures += 1;
    $("status").textContent = "no answer from the server (" + failures + ")";
  }
}

function merge(live) {
  for (const h of live.history || []) {
    let entry = history.get(h.name);
    if (!entry) { entry = { keys: [], points: [] }; history.set(h.name, entry); }
    entry.keys = h.controller_keys;
    for (const p of h.points) entry.points.push(p);
    if (entry.points.length > HOUR) entry.points.splice(0, entry.points.length - HOUR);
  }
  if (live.newest_t !== null && live.newest_t !== undefined) newest = live.newest_t;
}

function draw(now) {
  $("uptime").textContent = "up " + Math.round(now.uptime_s) + " s";
  const origins = now.backpressure_origins || [];
  const o = $("origin");
  o.textContent = origins.length ? "backpressure starts at " + origins.join(", ") : "no backpressure";
  o.className = origins.length ? "origin-some" : "origin-none";
  $("history-bytes").textContent = "at most " + (now.history_bytes_max / 1e6).toFixed(1) + " MB on the server";
  drawGraph(now, origins);
  drawStages(now, origins);
  drawTimeline();
}

function drawGraph(now, origins) {
  const svg = $("graph");
  svg.replaceChildren();
  const names = ["outside", ...now.stages.map((s) => s.name)];
  // Columns by depth from "outside" along the edges.
  const depth = new Map([["outside", 0]]);
  for (let round = 0; round < names.length; round++) {
    for (const e of now.edges) {
      if (depth.has(e.from) && !depth.has(e.to)) depth.set(e.to, depth.get(e.from) + 1);
    }
  }
  for (const n of names) if (!depth.has(n)) depth.set(n, 1);
  const cols = new Map();
  for (const n of names) {
    const d = depth.get(n);
    if (!cols.has(d)) cols.set(d, []);
    cols.get(d).push(n);
  }
  const width = svg.clientWidth || 900, height = 220;
  const ncol = Math.max(...cols.keys()) + 1;
  const pos = new Map();
  for (const [d, list] of cols) {
    list.forEach((n, i) => pos.set(n, { x: 60 + d * (width - 140) / Math.max(1, ncol - 1), y: (i + 1) * height / (list.length + 1) }));
  }
  const maxRate = Math.max(1, ...now.edges.map((e) => e.rate));
  for (const e of now.edges) {
    const a = pos.get(e.from), b = pos.get(e.to);
    if (!a || !b) continue;
    const w = 1 + 11 * Math.sqrt(e.rate / maxRate);
    svg.appendChild(el("svg:line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, stroke: e.rate > 0 ? "#3b7dd8" : "#ccd", "stroke-width": w, "stroke-opacity": 0.6 }));
    svg.appendChild(el("svg:text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 4, "text-anchor": "middle" }, fmtRate(e.rate) + "/s"));
  }
  const byName = new Map(now.stages.map((s) => [s.name, s]));
  for (const n of names) {
    const p = pos.get(n), s = byName.get(n);
    const fill = origins.includes(n) ? "#b00020" : s && s.pressed ? "#e0a000" : "#2a7a2a";
    svg.appendChild(el("svg:circle", { cx: p.x, cy: p.y, r: 7, fill, "data-stage": n }));
    svg.appendChild(el("svg:text", { x: p.x, y: p.y + 19, "text-anchor": "middle" }, n));
  }
}

function spark(points, pick, color) {
  const svg = el("svg:svg", { class: "spark", viewBox: "0 0 " + SPARK + " 34", preserveAspectRatio: "none" });
  const pts = points.slice(-SPARK);
  const vals = pts.map(pick).filter((v) => Number.isFinite(v));
  if (vals.length < 2) return svg;
  const max = Math.max(...vals, 1e-9);
  const t0 = pts[pts.length - 1].t - SPARK;
  const d = pts.filter((p) => Number.isFinite(pick(p)))
    .map((p, i) => (i ? "L" : "M") + (p.t - t0) + " " + (32 - 30 * pick(p) / max).toFixed(1)).join(" ");
  svg.appendChild(el("svg:path", { d, fill: "none", stroke: color, "stroke-width": 1.2, "vector-effect": "non-scaling-stroke" }));
  return svg;
}

function drawStages(now, origins) {
  const box = $("stages");
  box.replaceChildren();
  for (const s of now.stages) {
    const p = s.point;
    const card = el("div", { class: "stage" + (s.pressed ? " pressed" : "") + (origins.includes(s.name) ? " bottleneck" : ""), "data-stage": s.name });
    const h = el("h3", {}, s.name);
    if (origins.includes(s.name)) h.appendChild(el("span", { class: "badge" }, "backpressure starts here"));
    card.appendChild(h);
    const fill = p.threshold > 0 ? Math.min(1, p.queue / p.threshold) : 0;
    const bar = el("div", { class: "bar" + (fill >= 0.5 ? " hot" : ""), title: "queue / threshold" });
    bar.appendChild(el("div", { style: "width:" + (100 * fill).toFixed(1) + "%" }));
    const reasons = Object.entries(s.rejected_by || {}).map(([r, v]) => r + " " + fmtRate(v) + "/s").join(", ");
    const rows = [
      ["queue", p.queue + (p.threshold > 0 ? " / " + p.threshold : " (no threshold)"), "queue"],
      ["arrivals / completed", fmtRate(p.arrivals) + " / " + fmtRate(p.completed) + " /s", "rates"],
      ["admitted / rejected", fmtRate(p.admitted) + " / " + fmtRate(p.rejected) + " /s", "admission"],
      ["rejected by", reasons || "-", "reasons"],
      ["p50 / p90 / p99", fmtTime(p.p50) + " / " + fmtTime(p.p90) + " / " + fmtTime(p.p99), "percentiles"],
      ["threads / cap", s.mode === "inline" ? "inline" : p.threads + " / " + p.threads_max, "threads"],
    ];
    if (s.sizer && s.sizer.kind !== "seda") {
      const z = s.sizer.state;
      const goal = z.throughput_target_per_s == null ? "" : ", throughput target " + fmtRate(z.throughput_target_per_s) + "/s";
      rows.push(["sizer", s.sizer.kind + ": threads target " + (s.threads_target ?? "-") + goal, "sizer"]);
    }
    if (s.controller) {
      const st = Object.entries(s.controller.state).map(([k, v]) => k + " " + (Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3))).join(", ");
      rows.push([s.controller.name, st, "controller"]);
    }
    const t = el("table");
    for (const [k, v, cls] of rows) {
      const tr = el("tr", { class: cls });
      tr.appendChild(el("td", {}, k));
      tr.appendChild(el("td", { class: "v" }, v));
      t.appendChild(tr);
    }
    card.appendChild(bar);
    card.appendChild(t);
    const hist = history.get(s.name);
    if (hist) {
      card.appendChild(spark(hist.points, (q) => q.completed, "#3b7dd8"));
      card.appendChild(spark(hist.points, (q) => q.queue, "#d03030"));
    }
    box.appendChild(card);
  }
}

function drawTimeline() {
  const box = $("timeline");
  box.replaceChildren();
  for (const [name, h] of history) {
    const series = [["threads", (p) => p.threads, "#555"]];
    h.keys.slice(0, 4).forEach((k, i) => series.push([k, (p) => p.ctrl[i], ["#3b7dd8", "#d03030", "#2a7a2a", "#a050c0"][i]]));
    if (h.keys.length === 0 && h.points.every((p) => p.threads === 0)) continue;
    for (const [key, pick, color] of series) {
      const vals = h.points.map(pick).filter((v) => Number.isFinite(v));
      if (vals.length === 0) continue;
      const row = el("div", { class: "timeline-row" });
      const last = vals[vals.length - 1];
      row.appendChild(el("div", {}, name + " " + key + " = " + (Math.abs(last) >= 100 ? last.toFixed(0) : last.toPrecision(3))));
      const svg = el("svg:svg", { viewBox: "0 0 " + HOUR + " 40", preserveAspectRatio: "none" });
      const t0 = h.points.length ? h.points[h.points.length - 1].t - HOUR : 0;
      const max = Math.max(...vals, 1e-9), min = Math.min(...vals, 0);
      const pts = h.points.filter((p) => Number.isFinite(pick(p)));
      // Steps: a controller's value holds until its next decision.
      const d = pts.map((p, i) => {
        const y = (38 - 36 * (pick(p) - min) / (max - min || 1)).toFixed(1);
        return (i ? "H" + (p.t - t0) + " V" : "M" + (p.t - t0) + " ") + y;
      }).join(" ");
      svg.appendChild(el("svg:path", { d, fill: "none", stroke: color, "stroke-width": 1.5, "vector-effect": "non-scaling-stroke" }));
      row.appendChild(svg);
      box.appendChild(row);
    }
  }
}

poll();
setInterval(poll, 1000);
