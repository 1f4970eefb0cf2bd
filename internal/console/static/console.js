// Apollo console: polls this instance's /console/api/state every second
// and redraws. No third-party code; every string from the server is set as
// text, never parsed as HTML (the charts are SVG documents drawn by the
// server from escaped text, parsed as SVG).
"use strict";

const STATE_EVERY_MS = 1000;
const CHARTS_EVERY_MS = 2000;
let token = "";

function $(sel) { return document.querySelector(sel); }

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function fmtRate(v) {
  if (v === undefined || v === null) return "–";
  if (v === 0) return "0";
  return v >= 100 ? v.toFixed(0) : v.toFixed(1);
}

function fmtTotal(v) { return v === undefined || v === null ? "–" : String(Math.round(v)); }

function fmtMs(v) {
  if (v === null || v === undefined) return "–";
  return v >= 10 ? v.toFixed(0) + " ms" : v.toFixed(2) + " ms";
}

function fmtAge(s) {
  if (!isFinite(s)) return "–";
  if (s < 60) return s.toFixed(1) + " s";
  return (s / 60).toFixed(1) + " min";
}

function ago(iso, now) {
  if (!iso || iso.startsWith("0001")) return "never";
  return fmtAge((Date.parse(now) - Date.parse(iso)) / 1000) + " ago";
}

// readToken keeps the admin token of the URL's fragment (apollo dev prints
// the console's URL with it; a fragment is never sent to the server) for
// this tab, and takes it out of the address bar.
function readToken() {
  const m = location.hash.match(/token=([^&]+)/);
  if (m) {
    try {
      sessionStorage.setItem("apollo-admin-token", decodeURIComponent(m[1]));
    } catch (e) {
      // A malformed fragment: the fault panel asks for the token instead.
    }
    history.replaceState(null, "", location.pathname);
  }
  token = sessionStorage.getItem("apollo-admin-token") || "";
}

function setStatus(text, bad) {
  const s = $("#status");
  s.textContent = text;
  s.classList.toggle("bad", !!bad);
}

async function poll() {
  try {
    const r = await fetch("/console/api/state", { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    render(await r.json());
    setStatus("live · " + new Date().toLocaleTimeString(), false);
  } catch (e) {
    setStatus("cannot reach this instance: " + e.message, true);
  } finally {
    setTimeout(poll, STATE_EVERY_MS);
  }
}

async function refreshCharts() {
  for (const box of document.querySelectorAll("[data-chart]")) {
    try {
      const r = await fetch("/console/charts/" + box.dataset.chart + ".svg", { cache: "no-store" });
      if (!r.ok) continue;
      const doc = new DOMParser().parseFromString(await r.text(), "image/svg+xml");
      const svg = doc.documentElement;
      if (svg.nodeName !== "svg") continue;
      box.replaceChildren(document.importNode(svg, true));
    } catch (e) {
      // The next round tries again; the status line says if the instance is gone.
    }
  }
  setTimeout(refreshCharts, CHARTS_EVERY_MS);
}

function render(st) {
  document.body.dataset.instance = st.instance;
  const c = st.cluster;
  $("#summary").textContent = `instance ${st.instance} · read policy ${c.policy} · slot map ${fmtAge(c.slot_map_age_seconds)} old`;
  $("#refresh").textContent = `slot map fetched ${ago(c.slot_map_at, st.at)}; last refresh ${ago(c.last_refresh.at, st.at)}, ` +
    `reason ${c.last_refresh.reason || "–"}, ${c.last_refresh.ok ? "ok" : "failed: " + (c.last_refresh.error || "")}`;
  const problems = $("#problems");
  problems.hidden = !(st.problems && st.problems.length);
  problems.textContent = (st.problems || []).join(" · ");
  renderShards(c.shards, st);
  renderFigures("#traffic-figures", "traffic", st.traffic, TRAFFIC_ROWS);
  renderFigures("#booking-figures", "pipeline", st.pipeline, BOOKING_ROWS);
  renderFigures("#spampede-figures", "spampede", st.spampede, SPAMPEDE_ROWS);
  renderPipeline(st.pipeline);
  renderSpampede(st.spampede, st.at);
  renderFleet(st.fleet || [], st.spampede.rules.version);
  renderFaults(st.faults);
}

// renderFleet lists every instance as it announced itself: whether a load
// balancer would send it requests (its /readyz), and its rules version.
function renderFleet(members, rulesVersion) {
  $("#fleet tbody").replaceChildren(...members.map(m => {
    const ready = !m.known ? "not announced" : m.ready === null || m.ready === undefined ? "not reported" :
      m.ready ? "ready" : "not ready: " + (m.not_ready || "");
    return el("tr", { class: m.known && (m.ready === false || m.rules_version !== rulesVersion) ? "differs" : "" },
      el("td", { class: "mono" }, m.instance + (m.self ? " (this one)" : "")),
      el("td", { "data-instance-ready": m.instance }, ready),
      el("td", { class: "num", "data-instance-rules": m.instance }, m.known ? m.rules_version : "not announced"));
  }));
}

function nodeState(n) {
  if (n.state === "healthy" && n.behind) return "behind";
  return n.state;
}

function replication(n, now) {
  if (!n.replication) return "not checked yet";
  const age = (Date.parse(now) - Date.parse(n.replication_at)) / 1000;
  return age > 5 ? `${n.replication} (${fmtAge(age)} ago: not answering since)` : n.replication;
}

function renderShards(shards, st) {
  const box = $("#shards");
  box.replaceChildren(...shards.map(s => {
    const rows = s.nodes.map(n => el("tr", { "data-node": n.addr, "data-state": nodeState(n), class: "node " + nodeState(n) },
      el("td", {}, n.role),
      el("td", { class: "mono" }, n.addr),
      el("td", {}, el("span", { class: "badge " + nodeState(n), "data-role": "state" }, nodeState(n) + (n.eject_reason ? " (" + n.eject_reason + ")" : ""))),
      el("td", { class: "num" }, fmtMs(n.p50_ms)),
      el("td", { class: "num" }, fmtMs(n.p99_ms)),
      el("td", { class: "num" }, fmtRate(n.errors_per_s)),
      el("td", { class: "num" }, n.role === "replica" ? (n.lag_seconds >= 0 ? n.lag_seconds + " s" : "–") : ""),
      el("td", { class: "dim" }, n.role === "replica" ? replication(n, st.at) : "")));
    return el("div", { class: "shard", "data-shard": s.index },
      el("h3", {}, "shard " + s.index),
      el("table", {},
        el("thead", {}, el("tr", {}, ...["role", "address", "health", "p50", "p99", "errors/s", "lag", "replication"].map(h => el("th", {}, h)))),
        el("tbody", {}, ...rows)));
  }));
}

const TRAFFIC_ROWS = [
  ["calls_2xx", "API calls answered 2xx"], ["calls_4xx", "API calls answered 4xx"], ["calls_5xx", "API calls answered 5xx"],
  ["commands_ok", "Redis commands ok"], ["commands_error", "Redis commands failed"],
  ["commands_ambiguous", "writes that may have run"], ["commands_unconfirmed", "writes not acknowledged"],
  ["hedges_sent", "hedged reads"], ["hedges_won", "hedges that answered first"], ["retries_sent", "retries"],
  ["fallbacks_sent", "reads falling back to a primary"], ["reads_shed", "reads shed"],
];
const BOOKING_ROWS = [
  ["created", "created"], ["allocated", "allocated"], ["unallocated", "unallocated"],
  ["turned_away", "turned away by Spampede"], ["cancelled", "cancelled"],
];
const SPAMPEDE_ROWS = [
  ["admitted", "admitted"], ["rejected", "rejected (cell tripped now)"], ["rejected_cached", "rejected (cell already tripped)"],
  ["shadow_rejected", "would reject (shadow)"], ["fail_open", "admitted failing open"], ["no_rule", "no rule covers the pickup"],
];

function renderFigures(sel, prefix, f, rows) {
  const body = $(sel + " tbody");
  body.replaceChildren(...rows.map(([key, label]) => el("tr", {},
    el("th", {}, label),
    el("td", { class: "num", "data-key": prefix + ".per_second." + key }, fmtRate(f.per_second[key])),
    el("td", { class: "num", "data-key": prefix + ".totals." + key }, fmtTotal(f.totals[key])))));
}

function renderPipeline(p) {
  $("#open-total").textContent = p.open;
  $("#partition-count").textContent = (p.partitions || []).length;
  $("#unowned").textContent = p.unowned_partitions;
  let lo = 0;
  $("#ages tbody").replaceChildren(...(p.ages || []).map(b => {
    const band = b.under_seconds ? `${lo}–${b.under_seconds} s` : `${lo} s and more`;
    lo = b.under_seconds;
    return el("tr", { class: !b.under_seconds && b.count ? "differs" : "" }, el("td", {}, band), el("td", { class: "num", "data-key": "pipeline.ages." + band }, b.count));
  }));
  $("#ages-read").textContent = p.ages_read === p.open ? "all open bookings" : `${p.ages_read} of ${p.open} open bookings (the first due of each partition)`;
  $("#owners tbody").replaceChildren(...(p.owners || []).map(o => el("tr", { "data-owner": o.instance },
    el("td", { class: "mono" }, o.instance), el("td", { class: "num" }, o.partitions), el("td", { class: "num" }, o.open))));
  const owners = (p.owners || []).map(o => o.instance);
  $("#partitions").replaceChildren(...(p.partitions || []).map(x => {
    if (x.unread) return el("div", { class: "part unread", title: `partition ${x.partition}: its shard did not answer`, "data-partition": x.partition }, "?");
    const cls = "part owner-" + (x.owner ? owners.indexOf(x.owner) % 8 : "none") + (x.overdue_seconds > 5 ? " overdue" : "");
    const title = `partition ${x.partition}: ${x.owner || "no owner"}, ${x.open} open` +
      (x.oldest_seconds > 0 ? `, the oldest read ${x.oldest_seconds.toFixed(1)} s old` : "") +
      (x.overdue_seconds > 0 ? `, ${x.overdue_seconds.toFixed(1)} s overdue` : "");
    return el("div", { class: cls, title, "data-partition": x.partition }, x.open ? String(x.open) : "");
  }));
}

function renderSpampede(s, now) {
  $("#rules-version").textContent = s.rules.version;
  $("#rules tbody").replaceChildren(...(s.rules.rules || []).map(r => el("tr", {},
    el("td", {}, r.name + (r.services && r.services.length ? " (" + r.services.join(", ") + ")" : "")),
    el("td", { class: "mono" }, `${r.min_lat}…${r.max_lat}, ${r.min_lng}…${r.max_lng}`),
    el("td", { class: "num" }, r.cell_bits), el("td", { class: "num" }, r.bucket_seconds + " s"),
    el("td", { class: "num" }, r.threshold), el("td", { class: "num" }, r.hold_down_seconds + " s"),
    el("td", {}, r.shadow ? "shadow" : "enforcing"))));
  const tripped = s.tripped || [];
  $("#tripped-count").textContent = tripped.length;
  $("#tripped tbody").replaceChildren(...tripped.map(t => el("tr", { "data-cell": t.cell },
    el("td", { class: "mono" }, t.cell), el("td", {}, t.service), el("td", {}, t.rule + (t.shadow ? " (shadow)" : "")),
    el("td", { class: "num" }, t.count.toFixed(1)), el("td", {}, "in " + fmtAge((Date.parse(t.until) - Date.parse(now)) / 1000)))));
}

function renderFaults(f) {
  const sec = $("#faults");
  sec.hidden = !f;
  if (!f) return;
  $("#fault-nodes tbody").replaceChildren(...f.nodes.map(n => el("tr", { "data-fault-node": n.addr },
    el("td", { class: "mono" }, n.addr), el("td", { class: "num" }, n.shard), el("td", {}, n.process),
    el("td", {}, ...["kill", "hang", "resume"].map(a => el("button", { type: "button", "data-action": a, "data-node": n.addr, onclick: () => nodeFault(a, n.addr) }, a))))));
  const rd = f.reads;
  $("#reads-text").textContent = `rider app: ${rd.sent} batch reads of 20 drivers sent through the API, ${rd.ok} answered 200, ${rd.failed} failed`;
  $("#reads-text").dataset.failed = rd.failed;
  const r = f.rainstorm;
  $("#rain-text").textContent = r.on
    ? `raining: ${r.per_second} bookings/s within ${r.radius_m} m of (${r.lat}, ${r.lng}); ${r.sent} sent, ${r.created} created, ${r.rejected} turned away, ${r.failed} failed`
    : `dry. A rainstorm books ${r.per_second} rides a second within ${r.radius_m} m of (${r.lat}, ${r.lng}), more than the drivers there can take.`;
  const b = $("#rain-toggle");
  b.textContent = r.on ? "stop the rainstorm" : "start a rainstorm";
  b.onclick = () => post("/console/api/faults/rainstorm", { on: !r.on });
}

function nodeFault(action, node) { return post("/console/api/faults/node", { action, node }); }

async function post(path, body) {
  const err = $("#fault-error");
  err.hidden = true;
  if (!token) {
    const t = prompt("The fault panel needs the admin token (apollo dev printed the file it is in):");
    if (!t) return;
    token = t.trim();
    sessionStorage.setItem("apollo-admin-token", token);
  }
  try {
    const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json", "Authorization": "Bearer " + token }, body: JSON.stringify(body) });
    if (!r.ok) {
      const e = await r.json().catch(() => ({ error: { message: "HTTP " + r.status } }));
      if (r.status === 401) { token = ""; sessionStorage.removeItem("apollo-admin-token"); }
      throw new Error(e.error ? e.error.code + ": " + e.error.message : "HTTP " + r.status);
    }
    renderFaults(await r.json());
  } catch (e) {
    err.textContent = e.message;
    err.hidden = false;
  }
}

readToken();
poll();
refreshCharts();
