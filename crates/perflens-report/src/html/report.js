// perflens's offline report: everything it shows is in this file (the
// report in #perflens-report, the trace, if any, in #perflens-trace).
// No request leaves the page (its Content-Security-Policy forbids any).
"use strict";
(function () {
  const R = JSON.parse(document.getElementById("perflens-report").textContent);
  const traceText = document.getElementById("perflens-trace").textContent.trim();
  const T = traceText ? JSON.parse(traceText) : null;
  const $ = (sel, el) => (el || document).querySelector(sel);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  // Figures as the terminal report shows them.
  function ns(v) {
    if (v === undefined || v === null) return "-";
    if (v < 1000) return v + " ns";
    const units = [[1e9, " s"], [1e6, " ms"], [1e3, " µs"]];
    for (const [d, u] of units) if (v >= d) return (v / d).toFixed(2) + u;
    return v + " ns";
  }
  function bytes(v) {
    if (v === undefined || v === null) return "-";
    if (v < 1024) return v + " B";
    const units = ["KiB", "MiB", "GiB", "TiB"];
    let x = v, i = -1;
    while (x >= 1024 && i < units.length - 1) { x /= 1024; i++; }
    return x.toFixed(2) + " " + units[i];
  }
  function count(v) {
    if (v === undefined || v === null) return "-";
    return String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }
  const plain = (v) => (v === undefined || v === null ? "-" : String(v));

  const timed = R.mode !== "count";
  const hasAlloc = !!R.alloc;
  const hasCpu = !!(R.cpu && R.cpu.samples > 0);

  // The header: what was measured.
  $("#facts").textContent = [
    R.mode + " mode", "clock " + R.clock, "elapsed " + ns(R.elapsed_ns),
    count(R.functions.length) + " functions", count(R.paths.length) + " paths",
    (R.threads || []).length + " threads",
    hasAlloc ? "allocations counted" : "", hasCpu ? "CPU sampled at " + R.cpu.frequency_hz + " Hz" : "",
  ].filter(Boolean).join(" · ");

  // A sortable, filterable table: `cols` of {key, label, num, fmt, get}.
  function table(host, cols, rows, opts) {
    opts = opts || {};
    let sortKey = opts.sort || null, desc = true, filter = "";
    const get = (c, r) => (c.get ? c.get(r) : r[c.key]);
    if (opts.filter !== false) {
      const input = document.createElement("input");
      input.className = "filter";
      input.placeholder = "filter by name";
      input.addEventListener("input", () => { filter = input.value.toLowerCase(); draw(); });
      host.appendChild(input);
    }
    const info = document.createElement("div");
    info.className = "count";
    host.appendChild(info);
    const t = document.createElement("table");
    host.appendChild(t);
    t.innerHTML = "<thead><tr>" + cols.map((c) =>
      '<th data-key="' + esc(c.key) + '" class="' + (c.num ? "num" : "") + '">' + esc(c.label) + "</th>").join("") +
      "</tr></thead><tbody></tbody>";
    t.tHead.addEventListener("click", (e) => {
      const th = e.target.closest("th");
      if (!th) return;
      const k = th.dataset.key;
      if (k === sortKey) desc = !desc;
      else { sortKey = k; desc = cols.find((c) => c.key === k).num; }
      draw();
    });
    function draw() {
      const nameCol = cols[0];
      let shown = filter ? rows.filter((r) => String(get(nameCol, r)).toLowerCase().includes(filter)) : rows.slice();
      if (sortKey) {
        const c = cols.find((c) => c.key === sortKey);
        shown.sort((a, b) => {
          const x = get(c, a), y = get(c, b);
          const o = c.num ? (x ?? -1) - (y ?? -1) : String(x).localeCompare(String(y));
          return desc ? -o : o;
        });
      }
      for (const th of t.tHead.rows[0].cells) {
        th.className = (cols.find((c) => c.key === th.dataset.key).num ? "num" : "") +
          (th.dataset.key === sortKey ? " sorted " + (desc ? "desc" : "asc") : "");
      }
      const html = [];
      for (const r of shown) {
        html.push("<tr>");
        for (const c of cols) {
          const v = get(c, r);
          html.push('<td class="' + (c.num ? "num" : "name") + '" title="' + (c.num ? "" : esc(v)) + '">' + esc((c.fmt || plain)(v)) + "</td>");
        }
        html.push("</tr>");
      }
      t.tBodies[0].innerHTML = html.join("");
      info.textContent = shown.length === rows.length ? count(rows.length) + " rows" : count(shown.length) + " of " + count(rows.length) + " rows";
    }
    draw();
    return t;
  }

  // The calling-context tree from the paths. Each path is a chain to a
  // node that ran (leaf or interior); its segments are the figures of
  // every node on the chain, so inner nodes have theirs too. A node's CPU time includes its callees
  // (a node whose own path was not kept counts its children's).
  const tree = { name: "all", children: new Map(), cpu: 0 };
  for (const p of R.paths) {
    let n = tree;
    p.frames.forEach((f, i) => {
      if (!n.children.has(f)) n.children.set(f, { name: f, children: new Map(), cpu: 0, parent: n });
      n = n.children.get(f);
      if (p.segments && p.segments[i]) n.seg = p.segments[i];
    });
    n.cpu = Math.max(n.cpu, p.cpu_incl_ns || 0);
  }
  (function fill(n) {
    let sum = 0;
    for (const c of n.children.values()) sum += fill(c);
    n.cpu = Math.max(n.cpu, sum);
    return n.cpu;
  })(tree);

  // Functions.
  const fcols = [{ key: "name", label: "Function" }, { key: "kind", label: "Kind" }, { key: "calls", label: "Calls", num: true, fmt: count }];
  if (timed) {
    fcols.push(
      { key: "total_ns", label: "Total", num: true, fmt: ns },
      { key: "self_ns", label: "Self", num: true, fmt: ns },
      { key: "avg_ns", label: "Avg", num: true, fmt: ns });
    for (const p of Object.keys((R.functions[0] || {}).percentiles || { p50: 0, p95: 0, p99: 0 })) {
      fcols.push({ key: "pct_" + p, label: p, num: true, fmt: ns, get: (r) => (r.percentiles || {})[p] });
    }
  }
  if (hasAlloc) {
    fcols.push(
      { key: "alloc_bytes", label: "Alloc bytes", num: true, fmt: bytes },
      { key: "alloc_count", label: "Allocs", num: true, fmt: count },
      { key: "alloc_incl_bytes", label: "Incl bytes", num: true, fmt: bytes });
  }
  if (hasCpu) {
    fcols.push(
      { key: "cpu_ns", label: "CPU", num: true, fmt: ns },
      { key: "cpu_incl_ns", label: "CPU incl", num: true, fmt: ns });
  }
  table($("#functions"), fcols, R.functions, { sort: timed ? "total_ns" : "calls" });

  // Hot paths: the calling-context tree, children on demand.
  (function () {
    const host = $("#paths");
    if (!R.paths.length) { host.innerHTML = '<p class="empty">No paths.</p>'; return; }
    const root = tree;
    const value = (n) => (n.seg ? (timed ? n.seg.total_ns : n.seg.calls) : 0);
    const cols = [["Calls", (n) => count(n.seg.calls)]];
    if (timed) cols.push(["Total", (n) => ns(n.seg.total_ns)], ["Self", (n) => ns(n.seg.self_ns)]);
    if (hasAlloc) cols.push(["Alloc incl", (n) => bytes(n.seg.alloc_incl_bytes)]);
    if (hasCpu) cols.push(["CPU incl", (n) => ns(n.cpu)]);
    const t = document.createElement("table");
    t.className = "tree";
    t.innerHTML = "<thead><tr><th>Path</th>" + cols.map((c) => '<th class="num">' + c[0] + "</th>").join("") + "</tr></thead><tbody></tbody>";
    host.appendChild(t);
    const body = t.tBodies[0];
    function rowFor(n, depth) {
      const tr = document.createElement("tr");
      const kids = [...n.children.values()].sort((a, b) => value(b) - value(a));
      tr.innerHTML = '<td class="name" style="padding-left:' + (8 + depth * 16) + 'px"><span class="tw">' + (kids.length ? "▸" : "") + "</span>" + esc(n.name) + "</td>" +
        cols.map((c) => '<td class="num">' + (n.seg ? esc(c[1](n)) : "") + "</td>").join("");
      tr.title = n.name;
      let open = false, shown = [];
      tr.firstChild.addEventListener("click", () => {
        if (!kids.length) return;
        open = !open;
        tr.querySelector(".tw").textContent = open ? "▾" : "▸";
        if (open) {
          let after = tr;
          shown = kids.map((k) => { const r = rowFor(k, depth + 1); after.after(r.tr); after = r.last(); return r; });
        } else {
          for (const r of shown) r.remove();
          shown = [];
        }
      });
      return {
        tr,
        last: () => (shown.length ? shown[shown.length - 1].last() : tr),
        remove: () => { for (const r of shown) r.remove(); tr.remove(); },
        open: () => { if (!open) tr.firstChild.click(); return shown; },
      };
    }
    const tops = [...root.children.values()].sort((a, b) => value(b) - value(a));
    for (const n of tops) {
      const r = rowFor(n, 0);
      body.appendChild(r.tr);
      // The heaviest chain starts open, two levels deep.
      if (n === tops[0]) { const kids = r.open(); if (kids[0]) kids[0].open(); }
    }
  })();

  // CPU flamegraph from the paths' inclusive CPU time; click to zoom.
  (function () {
    const host = $("#flame");
    if (!hasCpu) { host.innerHTML = '<p class="empty">No CPU samples in this report (run with the cpu feature and PERFLENS_CPU=1).</p>'; return; }
    const root = tree;
    const note = document.createElement("p");
    note.className = "note";
    host.appendChild(note);
    const box = document.createElement("div");
    box.className = "flame";
    host.appendChild(box);
    const H = 18;
    function color(name) {
      let h = 0;
      for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
      return "hsl(" + (10 + (h % 40)) + "," + (70 + (h % 20)) + "%," + (60 + (h % 15)) + "%)";
    }
    function draw(top) {
      const width = box.clientWidth || 1200;
      const parts = [];
      let depth = 0;
      (function lay(n, x, d) {
        const w = top.cpu ? (n.cpu / top.cpu) * width : 0;
        if (w < 1) return;
        depth = Math.max(depth, d);
        parts.push('<div data-i="' + nodes.length + '" style="left:' + x.toFixed(1) + "px;width:" + w.toFixed(1) + "px;top:" + d * H + "px;background:" + color(n.name) + '" title="' + esc(n.name + " — " + ns(n.cpu) + " CPU (" + (100 * n.cpu / root.cpu).toFixed(1) + "%)") + '">' + esc(n.name) + "</div>");
        nodes.push(n);
        let cx = x;
        for (const c of [...n.children.values()].sort((a, b) => b.cpu - a.cpu)) { lay(c, cx, d + 1); cx += top.cpu ? (c.cpu / top.cpu) * width : 0; }
      })(top, 0, 0);
      box.style.height = (depth + 1) * H + "px";
      box.innerHTML = parts.join("");
      note.textContent = "CPU time by calling context of measured functions (" + ns(top.cpu) + (top === root ? "" : " under " + top.name + "; click the bottom bar to zoom out") + "). Width: CPU time including callees; click to zoom.";
    }
    let nodes = [];
    box.addEventListener("click", (e) => {
      const d = e.target.closest("div[data-i]");
      if (!d) return;
      const n = nodes[+d.dataset.i];
      nodes = [];
      draw(n === current && n.parent ? root : n);
      current = n === current ? root : n;
    });
    let current = root;
    draw(root);
    // Drawn again at its real width once its tab is shown, and on resize.
    new ResizeObserver(() => { nodes = []; draw(current); }).observe(box);
  })();

  // Waits, and the data-flow sections, as plain sortable tables.
  function section(id, rows, cols, sort) {
    const host = $("#" + id);
    if (!rows || !rows.length) { host.innerHTML = '<p class="empty">None in this report.</p>'; return; }
    table(host, cols, rows, { sort });
  }
  // The completed awaits (Completed, Waited, p50, p99) and the cancelled
  // ones (dropped while suspended: Cancelled, Cancelled wait) apart, so
  // that each figure describes one set; in the report's order (by total
  // wait, both sets).
  const completed = (w) => w.count - (w.cancelled || 0);
  section("waits", R.waits, [
    { key: "site", label: "Await site" }, { key: "function", label: "Function" },
    { key: "completed", label: "Completed", num: true, fmt: count, get: completed }, { key: "suspended", label: "Suspended", num: true, fmt: count },
    { key: "completed_wait_ns", label: "Waited", num: true, fmt: ns, get: (w) => w.wait_ns - (w.cancelled_wait_ns || 0) },
    { key: "p50_ns", label: "p50", num: true, fmt: ns }, { key: "p99_ns", label: "p99", num: true, fmt: ns },
    { key: "cancelled", label: "Cancelled", num: true, fmt: count, get: (w) => w.cancelled || 0 },
    { key: "cancelled_wait_ns", label: "Cancelled wait", num: true, fmt: ns, get: (w) => w.cancelled_wait_ns || 0 },
    { key: "measured_ns", label: "Measured inside", num: true, fmt: ns },
    { key: "expr", label: "Awaited" }], null);
  // A channel's capacity: a number, unbounded (sorted above every
  // number), or null ("-") when the report holds no channel made at the
  // site (capacity_known false; reports without the field know it).
  const UNBOUNDED = Number.MAX_SAFE_INTEGER;
  const capacity = (c) => (c.capacity_known === false ? null : c.capacity ?? UNBOUNDED);
  section("channels", R.channels, [
    { key: "name", label: "Channel" }, { key: "created", label: "Made", num: true, fmt: count },
    { key: "sent", label: "Sent", num: true, fmt: count }, { key: "received", label: "Received", num: true, fmt: count },
    { key: "queued", label: "Queued", num: true, fmt: count }, { key: "max_queued", label: "Max queued", num: true, fmt: count },
    { key: "capacity", label: "Capacity", num: true, get: capacity, fmt: (v) => (v === UNBOUNDED ? "unbounded" : count(v)) },
    { key: "dropped", label: "Dropped", num: true, fmt: count }, { key: "send_wait_ns", label: "Send wait", num: true, fmt: ns },
    { key: "recv_wait_ns", label: "Recv wait", num: true, fmt: ns }, { key: "latency_p50_ns", label: "Latency p50", num: true, fmt: ns },
    { key: "latency_p99_ns", label: "p99", num: true, fmt: ns }], "sent");
  section("locks", R.locks, [
    { key: "name", label: "Lock" }, { key: "acquisitions", label: "Acquired", num: true, fmt: count },
    { key: "contended", label: "Contended", num: true, fmt: count }, { key: "max_waiters", label: "Max waiters", num: true, fmt: count },
    { key: "wait_ns", label: "Wait", num: true, fmt: ns }, { key: "wait_p99_ns", label: "Wait p99", num: true, fmt: ns },
    { key: "hold_p50_ns", label: "Hold p50", num: true, fmt: ns }, { key: "hold_p99_ns", label: "Hold p99", num: true, fmt: ns }], "wait_ns");

  // The timeline: one track per thread (and task lane), slices nested by
  // time, arrows between them; the wheel zooms, dragging pans.
  (function () {
    const host = $("#timeline");
    if (!T) { host.innerHTML = '<p class="empty">No trace in this report (record one with PERFLENS_TRACE=trace.json and pass it with --trace, or set PERFLENS_HTML in the same run).</p>'; return; }
    const events = T.traceEvents || T;
    const names = new Map(), tracks = new Map(), flows = new Map();
    const key = (e) => e.pid + ":" + e.tid;
    for (const e of events) {
      if (e.ph === "M" && e.name === "thread_name") names.set(key(e), e.args.name);
      if (e.ph === "M" && e.name === "process_name") names.set(e.pid + ":", e.args.name);
      if (e.ph === "X") {
        if (!tracks.has(key(e))) tracks.set(key(e), []);
        tracks.get(key(e)).push({ name: e.name, ts: e.ts, end: e.ts + (e.dur || 0), cat: e.cat });
      }
      if (e.ph === "s" || e.ph === "f") {
        if (!flows.has(e.id)) flows.set(e.id, {});
        flows.get(e.id)[e.ph] = e;
      }
    }
    let t0 = Infinity, t1 = -Infinity;
    const lanes = [];
    for (const [k, slices] of tracks) {
      slices.sort((a, b) => a.ts - b.ts || b.end - a.end);
      const stack = [];
      let depth = 0;
      for (const s of slices) {
        while (stack.length && stack[stack.length - 1].end <= s.ts) stack.pop();
        s.depth = stack.length;
        depth = Math.max(depth, s.depth + 1);
        stack.push(s);
        t0 = Math.min(t0, s.ts); t1 = Math.max(t1, s.end);
      }
      lanes.push({ key: k, name: names.get(k) || k, slices, depth });
    }
    lanes.sort((a, b) => a.key.localeCompare(b.key, undefined, { numeric: true }));
    if (!lanes.length) { host.innerHTML = '<p class="empty">The trace has no slices.</p>'; return; }
    const arrows = [...flows.values()].filter((f) => f.s && f.f);
    const note = document.createElement("p");
    note.className = "note";
    note.textContent = lanes.length + " tracks, " + count(lanes.reduce((n, l) => n + l.slices.length, 0)) + " slices, " + count(arrows.length) + " arrows (a future's creation and the awaits that waited on it). Wheel: zoom; drag: pan.";
    host.appendChild(note);
    const box = document.createElement("div");
    box.className = "timeline";
    host.appendChild(box);
    const canvas = document.createElement("canvas");
    box.appendChild(canvas);
    const tip = document.createElement("div");
    tip.className = "tip";
    document.body.appendChild(tip);
    const LH = 16, LABEL = 160;
    let y = 0;
    for (const l of lanes) { l.y = y + 18; y += 18 + l.depth * LH + 6; }
    const height = y;
    let view0 = t0, view1 = t1 > t0 ? t1 : t0 + 1;
    const laneOf = new Map(lanes.map((l) => [l.key, l]));
    function xOf(ts, w) { return LABEL + ((ts - view0) / (view1 - view0)) * (w - LABEL); }
    function at(e, ts) {
      const l = laneOf.get(key(e));
      if (!l) return null;
      let best = null;
      for (const s of l.slices) if (s.ts <= ts && ts <= s.end && (!best || s.depth > best.depth)) best = s;
      return { l, y: l.y + (best ? best.depth * LH + LH / 2 : LH / 2) };
    }
    function draw() {
      const w = box.clientWidth || 1200, dpr = window.devicePixelRatio || 1;
      canvas.width = w * dpr; canvas.height = height * dpr;
      canvas.style.width = w + "px"; canvas.style.height = height + "px";
      const g = canvas.getContext("2d");
      g.scale(dpr, dpr);
      g.font = "11px system-ui, sans-serif";
      g.textBaseline = "middle";
      for (const l of lanes) {
        g.fillStyle = "#1d2330";
        g.fillText(l.name, 4, l.y - 9);
        g.strokeStyle = "#e4e7ec";
        g.beginPath(); g.moveTo(0, l.y - 17.5); g.lineTo(w, l.y - 17.5); g.stroke();
        for (const s of l.slices) {
          if (s.end < view0 || s.ts > view1) continue;
          const x0 = Math.max(LABEL, xOf(s.ts, w)), x1 = Math.min(w, xOf(s.end, w));
          if (x1 - x0 < 0.3) continue;
          g.fillStyle = s.cat === "poll" ? "#9ec5fe" : s.cat === "wait" ? "#ffe8a3" : "#f7b267";
          g.fillRect(x0, l.y + s.depth * LH, Math.max(1, x1 - x0 - 0.5), LH - 1);
          if (x1 - x0 > 30) {
            g.save(); g.beginPath(); g.rect(x0, l.y + s.depth * LH, x1 - x0 - 2, LH); g.clip();
            g.fillStyle = "#1d1d1d"; g.fillText(s.name, x0 + 3, l.y + s.depth * LH + LH / 2); g.restore();
          }
        }
      }
      g.strokeStyle = "#c92a2a"; g.fillStyle = "#c92a2a";
      for (const f of arrows) {
        const a = at(f.s, f.s.ts), b = at(f.f, f.f.ts);
        if (!a || !b) continue;
        const xa = xOf(f.s.ts, w), xb = xOf(f.f.ts, w);
        if ((xa < LABEL && xb < LABEL) || (xa > w && xb > w)) continue;
        g.beginPath(); g.moveTo(xa, a.y); g.lineTo(xb, b.y); g.stroke();
        const ang = Math.atan2(b.y - a.y, xb - xa);
        g.beginPath(); g.moveTo(xb, b.y);
        g.lineTo(xb - 6 * Math.cos(ang - 0.4), b.y - 6 * Math.sin(ang - 0.4));
        g.lineTo(xb - 6 * Math.cos(ang + 0.4), b.y - 6 * Math.sin(ang + 0.4));
        g.fill();
      }
    }
    canvas.addEventListener("wheel", (e) => {
      e.preventDefault();
      const w = box.clientWidth, x = Math.max(LABEL, e.offsetX);
      const ts = view0 + ((x - LABEL) / (w - LABEL)) * (view1 - view0);
      const k = e.deltaY > 0 ? 1.25 : 0.8;
      view0 = ts - (ts - view0) * k; view1 = ts + (view1 - ts) * k;
      draw();
    }, { passive: false });
    let drag = null;
    canvas.addEventListener("mousedown", (e) => { drag = { x: e.clientX, v0: view0, v1: view1 }; });
    window.addEventListener("mouseup", () => { drag = null; });
    canvas.addEventListener("mousemove", (e) => {
      const w = box.clientWidth;
      if (drag) {
        const dt = ((e.clientX - drag.x) / (w - LABEL)) * (drag.v1 - drag.v0);
        view0 = drag.v0 - dt; view1 = drag.v1 - dt; draw();
        return;
      }
      const ts = view0 + ((e.offsetX - LABEL) / (w - LABEL)) * (view1 - view0);
      let hit = null;
      for (const l of lanes) {
        const d = Math.floor((e.offsetY - l.y) / LH);
        if (d < 0 || d >= l.depth) continue;
        for (const s of l.slices) if (s.depth === d && s.ts <= ts && ts <= s.end) hit = { s, l };
      }
      if (!hit) { tip.style.display = "none"; return; }
      tip.textContent = hit.s.name + " — " + ns(Math.round((hit.s.end - hit.s.ts) * 1000)) + " (" + hit.l.name + ")";
      tip.style.left = e.clientX + 12 + "px"; tip.style.top = e.clientY + 12 + "px"; tip.style.display = "block";
    });
    canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
    const observer = new ResizeObserver(() => draw());
    observer.observe(box);
    window.perflensTimeline = { lanes, arrows, draw };
    draw();
  })();

  // Tabs.
  const tabs = [...document.querySelectorAll("nav button")];
  function show(id) {
    for (const b of tabs) b.classList.toggle("on", b.dataset.tab === id);
    for (const s of document.querySelectorAll("section")) s.classList.toggle("on", s.id === "tab-" + id);
    if (location.hash !== "#" + id) history.replaceState(null, "", "#" + id);
    window.dispatchEvent(new Event("resize"));
  }
  for (const b of tabs) b.addEventListener("click", () => show(b.dataset.tab));
  show((location.hash || "#functions").slice(1).replace(/[^a-z]/g, "") || "functions");
  // When the page was ready, for whoever measures it (its test does).
  window.perflensReadyMs = performance.now();
  document.body.dataset.ready = "1";
})();
