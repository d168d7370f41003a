// The live view: every claim as a row across the pipeline (pipeline.js), kept current from the
// API's watches (store.js); only the rows on screen are in the document, so thousands of claims
// scroll without freezing. #nodes shows each node's drivers, attachments and volume usage;
// #yaml/<path> shows an object as `kubectl get -o yaml` does.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const kRowHeight = 52;
  const kOverscan = 8;
  const kMaxEvents = 12;  // per object

  // Objects by what they refer to (pods by claim, attachments by volume), kept up to date with
  // each change rather than rebuilt: a change costs the same with 100 objects or 100,000.
  class RefIndex {
    constructor(refsOf) {
      this.refsOf = refsOf;
      this.byRef = new Map();  // ref -> Map key -> object
      this.refs = new Map();   // key -> its refs
    }
    get(ref) {
      const m = this.byRef.get(ref);
      return m ? [...m.values()] : [];
    }
    update(items, changed) {
      const keys = changed === null ? [...new Set([...this.refs.keys(), ...items.keys()])] : changed;
      for (const key of keys) {
        for (const ref of this.refs.get(key) || []) {
          const m = this.byRef.get(ref);
          if (m && m.delete(key) && !m.size) this.byRef.delete(ref);
        }
        this.refs.delete(key);
        const o = items.get(key);
        if (!o) continue;
        const refs = this.refsOf(o);
        this.refs.set(key, refs);
        for (const ref of refs) {
          if (!this.byRef.has(ref)) this.byRef.set(ref, new Map());
          this.byRef.get(ref).set(key, o);
        }
      }
    }
  }

  // ---- The indexes the rows are computed from -------------------------------------------------
  const idx = {
    classes: new Map(), volumes: new Map(), nodes: new Map(), csiDrivers: new Map(),
    csiNodes: new Map(), attachmentsByVolume: new RefIndex((va) => [va.volume]),
    podsByClaim: new RefIndex((p) => p.claims.map((c) => p.namespace + "/" + c)),
    eventsByUid: new Map(),
  };
  let claims = new Map();
  let sorted = [];   // claim keys, sorted
  let shown = [];    // of those, the ones the filter keeps
  let filter = "";
  let dirtyOrder = true;  // claims came or went, or the filter changed
  let dirtyRows = true;
  let selected = "";      // the claim whose details are open
  const eventUids = new Map();  // event key -> the uid of the object it is about

  function addTo(map, key, value) {
    let a = map.get(key);
    if (!a) map.set(key, (a = []));
    a.push(value);
  }
  const collections = {};
  const kPoll = 2000;  // for the kinds listed again rather than watched (store.js)
  function collection(name, path, slim, after, poll = 0) {
    collections[name] = new Collection(path, slim, (changed) => {
      if (after) after(changed);
      dirtyRows = true;
      schedule();
    }, poll);
  }
  collection("claims", "/api/v1/persistentvolumeclaims", Slim.claim, (changed) => {
    claims = collections.claims.items;
    if (changed === null || [...changed].some((k) => !sortedHas(k) || !claims.has(k))) dirtyOrder = true;
  });
  collection("volumes", "/api/v1/persistentvolumes", Slim.volume, () => {
    idx.volumes = collections.volumes.items;
  });
  collection("classes", "/apis/storage.k8s.io/v1/storageclasses", Slim.storageClass, () => {
    idx.classes = collections.classes.items;
  }, kPoll);
  collection("attachments", "/apis/storage.k8s.io/v1/volumeattachments", Slim.attachment, (changed) => {
    idx.attachmentsByVolume.update(collections.attachments.items, changed);
  });
  collection("pods", "/api/v1/pods", Slim.pod, (changed) => {
    idx.podsByClaim.update(collections.pods.items, changed);
  });
  collection("nodes", "/api/v1/nodes", Slim.node, () => {
    idx.nodes = collections.nodes.items;
    if (location.hash.startsWith("#nodes")) renderNodes();
  }, kPoll);
  collection("csiNodes", "/apis/storage.k8s.io/v1/csinodes", Slim.csiNode, () => {
    idx.csiNodes = collections.csiNodes.items;
  }, kPoll);
  collection("csiDrivers", "/apis/storage.k8s.io/v1/csidrivers", Slim.csiDriver, () => {
    idx.csiDrivers = collections.csiDrivers.items;
  }, kPoll);
  collection("events", "/api/v1/events", Slim.event, (changed) => {
    const items = collections.events.items;
    if (changed === null) {
      idx.eventsByUid = new Map();
      eventUids.clear();
      for (const [key, e] of items) {
        addTo(idx.eventsByUid, e.uid, e);
        eventUids.set(key, e.uid);
      }
      for (const a of idx.eventsByUid.values()) a.sort((x, y) => x.at - y.at);
      return;
    }
    for (const key of changed) {
      const e = items.get(key);
      // An event updated (its count grew) or gone: drop the old copy first.
      const name = key.slice(key.indexOf("/") + 1);
      const uid = e ? e.uid : eventUids.get(key);
      const kept = (idx.eventsByUid.get(uid) || []).filter((x) => x.name !== name);
      if (e) {
        eventUids.set(key, e.uid);
        kept.push(e);
        kept.sort((x, y) => x.at - y.at);
        if (kept.length > kMaxEvents) kept.splice(0, kept.length - kMaxEvents);
      } else {
        eventUids.delete(key);
      }
      if (kept.length) idx.eventsByUid.set(uid, kept);
      else idx.eventsByUid.delete(uid);
    }
  });

  function sortedHas(key) {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (sorted[mid] < key) lo = mid + 1;
      else hi = mid;
    }
    return lo < sorted.length && sorted[lo] === key;
  }

  // ---- Formatting ------------------------------------------------------------------------------
  function duration(ms) {
    if (ms === null || ms === undefined || !isFinite(ms) || ms < 0) return "";
    if (ms < 1000) return "<1s";  // the API's times are whole seconds
    const s = ms / 1000;
    if (s < 60) return (s < 10 ? s.toFixed(1) : Math.round(s)) + "s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + "m" + (Math.floor(s % 60) ? Math.floor(s % 60) + "s" : "");
    const h = Math.floor(m / 60);
    if (h < 24) return h + "h" + (m % 60 ? (m % 60) + "m" : "");
    return Math.floor(h / 24) + "d" + (h % 24 ? (h % 24) + "h" : "");
  }
  const kStateWords = { done: "done", progress: "in progress", failed: "failed", waiting: "waiting", none: "n/a" };
  function timing(s, now) {
    if (s.took !== null && s.took !== undefined) return duration(s.took);
    if ((s.state === "progress" || s.state === "waiting" || s.state === "failed") && s.since) {
      return "for " + duration(now - s.since);
    }
    return "";
  }

  // ---- The claims table ------------------------------------------------------------------------
  const rows = $("rows");
  const spacer = $("spacer");
  const pool = [];  // row elements, reused as the view scrolls

  function makeRow() {
    const r = el("div", "row");
    r.setAttribute("role", "row");
    r.appendChild(el("div", "cell claim"));
    for (const s of Pipeline.kSteps) {
      const c = el("div", "cell step");
      c.dataset.step = s.id;
      c.appendChild(el("span", "dot"));
      c.appendChild(el("span", "label"));
      c.appendChild(el("span", "took"));
      r.appendChild(c);
    }
    r.appendChild(el("div", "why"));
    r.addEventListener("click", () => openDetail(r.dataset.claim));
    rows.appendChild(r);
    return r;
  }

  function fillRow(r, model, now) {
    r.dataset.claim = model.key;
    r.dataset.state = model.state;
    r.classList.toggle("selected", model.key === selected);
    const c = model.claim;
    const head = r.children[0];
    head.textContent = "";
    head.appendChild(el("span", "ns", c.namespace + "/"));
    head.appendChild(el("span", "name", c.name));
    head.appendChild(el("span", "phase " + c.phase, c.phase));
    head.title = `${c.namespace}/${c.name} · ${c.phase} · created ${duration(now - c.created)} ago`;
    model.steps.forEach((s, i) => {
      const cell = r.children[i + 1];
      cell.dataset.state = s.state;
      cell.children[1].textContent = s.label;
      cell.children[2].textContent = timing(s, now);
      cell.title = `${Pipeline.kSteps[i].title}: ${kStateWords[s.state]}${s.label ? " · " + s.label : ""}` +
        `${s.detail ? " · " + s.detail : ""}${s.why ? "\n" + s.why : ""}`;
    });
    const why = r.lastChild;
    why.textContent = model.why ? `${Pipeline.kSteps.find((k) => k.id === model.why.id).title}: ${model.why.why}` : "";
    why.dataset.step = model.why ? model.why.id : "";
  }

  function applyOrder() {
    sorted = [...claims.keys()].sort();
    const f = filter.toLowerCase();
    shown = !f ? sorted : sorted.filter((k) => {
      if (k.toLowerCase().includes(f)) return true;
      const c = claims.get(k);
      return (c.className || "").toLowerCase().includes(f) || c.selectedNode.toLowerCase().includes(f) ||
        c.volumeName.toLowerCase().includes(f) || c.phase.toLowerCase() === f;
    });
    spacer.style.height = shown.length * kRowHeight + "px";
    dirtyOrder = false;
  }

  function renderRows() {
    if (dirtyOrder) applyOrder();
    const now = Date.now();
    const top = rows.scrollTop;
    const first = Math.max(0, Math.floor(top / kRowHeight) - kOverscan);
    const last = Math.min(shown.length, Math.ceil((top + rows.clientHeight) / kRowHeight) + kOverscan);
    while (pool.length < last - first) pool.push(makeRow());
    for (let i = 0; i < pool.length; i++) {
      const r = pool[i];
      const n = first + i;
      if (n >= last) {
        r.hidden = true;
        continue;
      }
      r.hidden = false;
      r.style.transform = `translateY(${n * kRowHeight}px)`;
      fillRow(r, Pipeline.row(claims.get(shown[n]), idx, now), now);
    }
    $("empty").hidden = shown.length > 0 || !collections.claims.synced;
  }

  function renderSummary() {
    const counts = { Bound: 0, Pending: 0, Lost: 0 };
    for (const c of claims.values()) counts[c.phase] = (counts[c.phase] || 0) + 1;
    $("summary").textContent = `${claims.size} claims · ${counts.Bound} bound · ${counts.Pending} pending` +
      (counts.Lost ? ` · ${counts.Lost} lost` : "") + (filter ? ` · ${shown.length} shown` : "");
    const live = Object.values(collections).every((c) => c.live);
    $("conn").textContent = live ? "live" : "connecting";
    $("conn").dataset.live = live;
  }

  // ---- A claim's details -----------------------------------------------------------------------
  function yamlLink(text, path) {
    const a = el("a", "yaml-link", text);
    a.href = "#yaml" + path;
    return a;
  }

  function openDetail(key) {
    selected = key || "";
    renderDetail();
    dirtyRows = true;
    schedule();
  }

  function renderDetail() {
    const box = $("detail");
    const c = claims.get(selected);
    box.hidden = !c;
    if (!c) return;
    const model = Pipeline.row(c, idx, Date.now());
    box.textContent = "";
    const close = el("button", "close", "×");
    close.setAttribute("aria-label", "Close");
    close.addEventListener("click", () => openDetail(""));
    box.appendChild(close);
    box.appendChild(el("h2", "", `${c.namespace}/${c.name}`));
    const links = el("p", "links");
    links.appendChild(yamlLink("claim", `/api/v1/namespaces/${c.namespace}/persistentvolumeclaims/${c.name}`));
    const cls = model.steps[0].state === "done" ? model.steps[0].label : "";
    if (cls) links.appendChild(yamlLink("class", `/apis/storage.k8s.io/v1/storageclasses/${cls}`));
    if (model.pv) links.appendChild(yamlLink("volume", `/api/v1/persistentvolumes/${model.pv.name}`));
    for (const va of model.pv ? idx.attachmentsByVolume.get(model.pv.name) : []) {
      links.appendChild(yamlLink("attachment", `/apis/storage.k8s.io/v1/volumeattachments/${va.name}`));
    }
    for (const p of model.pods) links.appendChild(yamlLink("pod " + p.name, `/api/v1/namespaces/${p.namespace}/pods/${p.name}`));
    if (model.pod && model.pod.node) links.appendChild(yamlLink("node", `/api/v1/nodes/${model.pod.node}`));
    box.appendChild(links);
    const list = el("ol", "steps");
    const now = Date.now();
    model.steps.forEach((s, i) => {
      const li = el("li");
      li.dataset.step = s.id;
      li.dataset.state = s.state;
      li.appendChild(el("span", "dot"));
      li.appendChild(el("b", "", Pipeline.kSteps[i].title));
      li.appendChild(el("span", "state", kStateWords[s.state]));
      if (s.label) li.appendChild(el("span", "label", s.label));
      const t = timing(s, now);
      if (t) li.appendChild(el("span", "took", t));
      if (s.why) li.appendChild(el("div", "why", s.why));
      list.appendChild(li);
    });
    box.appendChild(list);
    const evs = [];
    for (const uid of [c.uid, model.pv && model.pv.uid, ...model.pods.map((p) => p.uid)]) {
      for (const e of (uid && idx.eventsByUid.get(uid)) || []) evs.push(e);
    }
    evs.sort((a, b) => a.at - b.at);
    if (evs.length) {
      box.appendChild(el("h3", "", "Events"));
      const list = el("ul", "events");
      for (const e of evs.slice(-20)) {
        const li = el("li", e.type === "Warning" ? "warning" : "");
        const head = el("div", "event-head");
        head.appendChild(el("b", "", e.reason));
        head.appendChild(el("span", "", ` · ${e.kind} · ${duration(now - e.at)} ago` +
          (e.count > 1 ? ` (×${e.count})` : "")));
        li.appendChild(head);
        li.appendChild(el("div", "event-message", e.message));
        list.appendChild(li);
      }
      box.appendChild(list);
    }
  }

  // ---- YAML --------------------------------------------------------------------------------------
  async function renderYaml(path) {
    const box = $("yaml-view");
    $("yaml-path").textContent = path;
    const pre = $("yaml");
    pre.textContent = "loading…";
    pre.dataset.path = path;
    pre.dataset.ready = "false";
    try {
      const obj = await Api.json(path);
      if (pre.dataset.path !== path) return;
      pre.textContent = Yaml.toYaml(obj);
    } catch (e) {
      pre.textContent = e.message;
    }
    pre.dataset.ready = "true";
    box.hidden = false;
  }

  // ---- Nodes -------------------------------------------------------------------------------------
  const usage = new Map();  // node -> Map "ns/claim" -> {capacity, used, available, inodes...}
  let usageTimer = 0;

  function parseVolumeStats(text) {
    const m = new Map();
    for (const line of text.split("\n")) {
      if (!line.startsWith("kubelet_volume_stats_")) continue;
      const match = /^kubelet_volume_stats_(\w+)\{([^}]*)\} (\S+)/.exec(line);
      if (!match) continue;
      const labels = {};
      for (const [, k, v] of match[2].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
      const key = labels.namespace + "/" + labels.persistentvolumeclaim;
      if (!m.has(key)) m.set(key, {});
      m.get(key)[match[1]] = Number(match[3]);
    }
    return m;
  }

  async function refreshUsage() {
    await Promise.all([...idx.nodes.keys()].map(async (n) => {
      try {
        const r = await Api.get(`/api/v1/nodes/${encodeURIComponent(n)}/proxy/metrics`);
        usage.set(n, parseVolumeStats(await r.text()));
      } catch (e) {
        usage.delete(n);
      }
    }));
    renderNodes();
  }

  function bytes(n) {
    if (!isFinite(n)) return "";
    const u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) {
      n /= 1024;
      i++;
    }
    return (i ? n.toFixed(1) : n) + " " + u[i];
  }

  function renderNodes() {
    const box = $("nodes-view");
    if (box.hidden) return;
    box.textContent = "";
    for (const node of [...idx.nodes.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      const card = el("section", "node");
      card.dataset.node = node.name;
      const h = el("h2", "", node.name);
      h.appendChild(el("span", "ready " + (node.ready === "True" ? "ok" : "bad"), node.ready === "True" ? "Ready" : "NotReady"));
      for (const p of node.pressure) h.appendChild(el("span", "ready bad", p));
      h.appendChild(yamlLink("yaml", `/api/v1/nodes/${node.name}`));
      card.appendChild(h);
      const csi = idx.csiNodes.get(node.name);
      const drivers = el("p", "drivers");
      drivers.appendChild(el("b", "", "CSI drivers: "));
      drivers.appendChild(document.createTextNode(csi && csi.drivers.length
        ? csi.drivers.map((d) => d.name + (d.topologyKeys.length ? ` (${d.topologyKeys.join(", ")})` : "")).join(", ")
        : "none"));
      card.appendChild(drivers);
      const attached = el("p", "attached");
      attached.appendChild(el("b", "", "Attached: "));
      attached.appendChild(document.createTextNode(node.attached.length ? node.attached.join(", ") : "none"));
      card.appendChild(attached);
      const inUse = el("p", "in-use");
      inUse.appendChild(el("b", "", "In use: "));
      inUse.appendChild(document.createTextNode(node.inUse.length ? node.inUse.join(", ") : "none"));
      card.appendChild(inUse);
      const stats = usage.get(node.name);
      const t = el("table", "usage");
      const head = el("tr");
      for (const c of ["Claim", "Used", "Capacity", "Available", "Inodes used", ""]) head.appendChild(el("th", "", c));
      t.appendChild(head);
      for (const [key, s] of [...(stats || new Map())].sort()) {
        const tr = el("tr");
        tr.dataset.claim = key;
        tr.appendChild(el("td", "", key));
        tr.appendChild(el("td", "used", bytes(s.used_bytes)));
        tr.appendChild(el("td", "", bytes(s.capacity_bytes)));
        tr.appendChild(el("td", "", bytes(s.available_bytes)));
        tr.appendChild(el("td", "", isFinite(s.inodes_used) ? String(s.inodes_used) : ""));
        const bar = el("td", "bar");
        const fill = el("span");
        fill.style.width = Math.min(100, (100 * s.used_bytes) / (s.capacity_bytes || 1)).toFixed(1) + "%";
        bar.appendChild(fill);
        tr.appendChild(bar);
        t.appendChild(tr);
      }
      if (!stats || !stats.size) {
        const tr = el("tr");
        tr.appendChild(el("td", "", stats ? "no volumes in use" : "usage not reported yet"));
        t.appendChild(tr);
      }
      card.appendChild(t);
      box.appendChild(card);
    }
  }

  // ---- Routing, scheduling, start -----------------------------------------------------------------
  let scheduled = false;
  let lastSummary = 0;
  function schedule() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      if (dirtyOrder || dirtyRows) {
        dirtyRows = false;
        renderRows();
        if (selected) renderDetail();
      }
      const now = Date.now();
      const wasReady = window.kvolUi.ready;
      if (!wasReady && Object.values(collections).every((c) => c.synced)) {
        window.kvolUi.ready = true;
        window.kvolUi.loadedMs = performance.now();
      }
      if (now - lastSummary > 500 || !wasReady) {
        lastSummary = now;
        renderSummary();
      }
    });
  }

  function route() {
    const h = location.hash || "#claims";
    const nodes = h.startsWith("#nodes");
    const yaml = h.startsWith("#yaml/");
    $("claims-view").hidden = nodes;
    $("nodes-view").hidden = !nodes;
    $("yaml-view").hidden = !yaml;
    $("tab-claims").classList.toggle("active", !nodes);
    $("tab-nodes").classList.toggle("active", nodes);
    clearInterval(usageTimer);
    if (nodes) {
      renderNodes();
      refreshUsage();
      usageTimer = setInterval(refreshUsage, 10000);
    }
    if (yaml) renderYaml(decodeURIComponent(h.slice(5)));
    dirtyRows = true;
    schedule();
  }

  window.kvolUi = { ready: false, loadedMs: 0, shown: () => shown.length, claims: () => claims.size };

  $("filter").value = new URLSearchParams(location.search).get("q") || "";
  filter = $("filter").value.trim();
  $("filter").addEventListener("input", () => {
    filter = $("filter").value.trim();
    const u = new URL(location.href);
    if (filter) u.searchParams.set("q", filter);
    else u.searchParams.delete("q");
    history.replaceState(null, "", u);
    dirtyOrder = true;
    rows.scrollTop = 0;
    schedule();
  });
  rows.addEventListener("scroll", () => {
    dirtyRows = true;
    schedule();
  }, { passive: true });
  window.addEventListener("resize", () => {
    dirtyRows = true;
    schedule();
  });
  window.addEventListener("hashchange", route);
  $("yaml-close").addEventListener("click", () => history.back());
  // Times and "for 3s" move on even when nothing changes.
  setInterval(() => {
    dirtyRows = true;
    lastSummary = 0;
    schedule();
  }, 1000);

  Api.onAuthNeeded = () => {
    $("login").hidden = false;
  };
  $("login").addEventListener("submit", (e) => {
    e.preventDefault();
    Api.token = $("token").value.trim();
    sessionStorage.setItem("kvol-token", Api.token);
    $("login").hidden = true;
  });

  window.addEventListener("pagehide", () => {
    for (const c of Object.values(collections)) c.stop();
  });

  route();
  for (const c of Object.values(collections)) c.run();
})();
