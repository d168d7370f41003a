// The API, as the page reads it: each resource listed once (in pages) and then watched, as an
// informer does, keeping a slim copy of each object. Through `kubectl proxy` requests carry no
// token (the proxy adds it); served by kvol directly, they carry the one the user gave.
"use strict";

class AuthError extends Error {}

const Api = {
  token: sessionStorage.getItem("kvol-token") || "",
  onAuthNeeded: () => {},
  headers() {
    const h = { Accept: "application/json" };
    if (this.token) h.Authorization = "Bearer " + this.token;
    return h;
  },
  async get(path, signal) {
    const r = await fetch(path, { headers: this.headers(), signal, cache: "no-store" });
    if (r.status === 401) {
      this.onAuthNeeded();
      throw new AuthError("the API asks for a token");
    }
    if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${(await r.text()).slice(0, 300)}`);
    return r;
  },
  async json(path, signal) {
    return (await this.get(path, signal)).json();
  },
};

// One resource, listed and watched. `slim` keeps what the page needs of an object; `onChange`
// is called with the keys that changed ("ns/name"), or with null after a whole (re)list.
//
// A browser opens at most six HTTP/1.1 connections to one host (kubectl proxy speaks no
// HTTP/2), and each watch holds one: the kinds that change with each claim are watched, and the
// few, small, slow-changing kinds (classes, nodes, drivers) are listed again every `poll`
// milliseconds instead, which leaves a connection for the rest of the page's requests.
class Collection {
  constructor(path, slim, onChange, poll = 0) {
    this.path = path;
    this.slim = slim;
    this.onChange = onChange;
    this.poll = poll;
    this.abort = new AbortController();
    this.items = new Map();
    this.synced = false;
    this.live = false;
    this.stopped = false;
  }

  // Ends the watch and its connection: a page that goes must not keep the browser's few
  // connections to the host from the page that comes.
  stop() {
    this.stopped = true;
    this.abort.abort();
  }

  static keyOf(meta) {
    return meta.namespace ? meta.namespace + "/" + meta.name : meta.name;
  }

  // Lists, then watches from where the list (or the last event) left off; lists again only
  // when the watch says that point was compacted away.
  async run() {
    let delay = 500;
    let rv = null;
    while (!this.stopped) {
      try {
        if (this.poll) {
          await this.list();
          this.live = true;
          await new Promise((r) => setTimeout(r, this.poll));
          continue;
        }
        if (rv === null) rv = await this.list();
        rv = await this.watch(rv);
        delay = 500;
      } catch (e) {
        this.live = false;
        if (!(e instanceof AuthError)) console.warn(this.path, e.message);
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 10000);
      }
    }
  }

  async list() {
    const items = new Map();
    let cont = "";
    let rv = "";
    do {
      const q = "?limit=5000" + (cont ? "&continue=" + encodeURIComponent(cont) : "");
      const page = await Api.json(this.path + q, this.abort.signal);
      for (const o of page.items || []) items.set(Collection.keyOf(o.metadata), this.slim(o));
      cont = (page.metadata && page.metadata.continue) || "";
      rv = page.metadata.resourceVersion;
    } while (cont);
    this.items = items;
    this.synced = true;
    this.onChange(null);
    return rv;
  }

  // Applies watch events until the stream ends: the resource version to watch from next, or
  // null when the watch said its start was compacted away (list again).
  async watch(rv) {
    const q = "?watch=1&allowWatchBookmarks=true&resourceVersion=" + encodeURIComponent(rv);
    const r = await Api.get(this.path + q, this.abort.signal);
    this.live = true;
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    let last = rv;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return last;
        buffered += decoder.decode(value, { stream: true });
        const changed = new Set();
        let nl;
        while ((nl = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (!line.trim()) continue;
          const ev = JSON.parse(line);
          if (ev.type === "ERROR") {
            if (changed.size) this.onChange(changed);
            reader.cancel();
            return null;
          }
          last = ev.object.metadata.resourceVersion || last;
          if (ev.type === "BOOKMARK") continue;
          const key = Collection.keyOf(ev.object.metadata);
          if (ev.type === "DELETED") this.items.delete(key);
          else this.items.set(key, this.slim(ev.object));
          changed.add(key);
        }
        if (changed.size) this.onChange(changed);
      }
    } finally {
      this.live = false;
    }
  }
}

// What the page keeps of each kind.
const Slim = {
  meta(o) {
    const m = o.metadata;
    return {
      name: m.name, namespace: m.namespace || "", uid: m.uid,
      created: Date.parse(m.creationTimestamp) || 0,
      deleting: !!m.deletionTimestamp,
    };
  },
  claim(o) {
    const a = o.metadata.annotations || {};
    return Object.assign(Slim.meta(o), {
      className: o.spec.storageClassName,
      volumeName: o.spec.volumeName || "",
      phase: (o.status && o.status.phase) || "Pending",
      selectedNode: a["volume.kubernetes.io/selected-node"] || "",
      capacity: (o.status && o.status.capacity && o.status.capacity.storage) || "",
      request: (o.spec.resources && o.spec.resources.requests && o.spec.resources.requests.storage) || "",
    });
  },
  volume(o) {
    const a = o.metadata.annotations || {};
    const s = o.spec;
    const kind = s.csi ? "csi" : s.hostPath ? "hostPath" : s.local ? "local" : s.nfs ? "nfs"
      : s.flexVolume ? "flexVolume" : "other";
    return Object.assign(Slim.meta(o), {
      phase: (o.status && o.status.phase) || "",
      message: (o.status && o.status.message) || "",
      provisionedBy: a["pv.kubernetes.io/provisioned-by"] || "",
      kind,
      driver: s.csi ? s.csi.driver : "",
      capacity: (s.capacity && s.capacity.storage) || "",
      claim: s.claimRef ? s.claimRef.namespace + "/" + s.claimRef.name : "",
    });
  },
  storageClass(o) {
    const a = o.metadata.annotations || {};
    return Object.assign(Slim.meta(o), {
      provisioner: o.provisioner,
      bindingMode: o.volumeBindingMode || "Immediate",
      isDefault: a["storageclass.kubernetes.io/is-default-class"] === "true",
    });
  },
  attachment(o) {
    const st = o.status || {};
    return Object.assign(Slim.meta(o), {
      volume: (o.spec.source && o.spec.source.persistentVolumeName) || "",
      node: o.spec.nodeName,
      attacher: o.spec.attacher,
      attached: !!st.attached,
      attachError: (st.attachError && st.attachError.message) || "",
      detachError: (st.detachError && st.detachError.message) || "",
    });
  },
  pod(o) {
    const st = o.status || {};
    const claims = [];
    for (const v of o.spec.volumes || []) {
      if (v.persistentVolumeClaim) claims.push(v.persistentVolumeClaim.claimName);
      else if (v.ephemeral) claims.push(o.metadata.name + "-" + v.name);
    }
    const scheduled = (st.conditions || []).find((c) => c.type === "PodScheduled");
    return Object.assign(Slim.meta(o), {
      node: o.spec.nodeName || "",
      claims,
      phase: st.phase || "Pending",
      scheduledAt: scheduled && scheduled.status === "True"
        ? Date.parse(scheduled.lastTransitionTime) || 0 : 0,
      unschedulable: scheduled && scheduled.status === "False" ? scheduled.message || "" : "",
      containers: (o.spec.containers || []).length,
      statuses: (st.containerStatuses || []).map((c) => ({
        name: c.name,
        ready: !!c.ready,
        running: c.state && c.state.running ? Date.parse(c.state.running.startedAt) || 0 : 0,
        waiting: c.state && c.state.waiting
          ? { reason: c.state.waiting.reason || "", message: c.state.waiting.message || "" } : null,
        terminated: c.state && c.state.terminated
          ? { reason: c.state.terminated.reason || "", exitCode: c.state.terminated.exitCode,
              at: Date.parse(c.state.terminated.startedAt) || 0 } : null,
      })),
    });
  },
  node(o) {
    const st = o.status || {};
    const ready = (st.conditions || []).find((c) => c.type === "Ready");
    return Object.assign(Slim.meta(o), {
      ready: ready ? ready.status : "Unknown",
      pressure: (st.conditions || []).filter((c) => c.type.endsWith("Pressure") && c.status === "True")
        .map((c) => c.type),
      inUse: st.volumesInUse || [],
      attached: (st.volumesAttached || []).map((v) => v.name),
      managed: ((o.metadata.annotations || {})["volumes.kubernetes.io/controller-managed-attach-detach"]) === "true",
    });
  },
  csiNode(o) {
    return Object.assign(Slim.meta(o), {
      drivers: (o.spec.drivers || []).map((d) => ({
        name: d.name, nodeID: d.nodeID, topologyKeys: d.topologyKeys || [],
        count: d.allocatable && d.allocatable.count,
      })),
    });
  },
  csiDriver(o) {
    return Object.assign(Slim.meta(o), {
      attachRequired: o.spec.attachRequired !== false,
    });
  },
  event(o) {
    const io = o.involvedObject || o.regarding || {};
    return {
      name: o.metadata.name, namespace: o.metadata.namespace || "",
      uid: io.uid || "", kind: io.kind || "",
      type: o.type || "Normal",
      reason: o.reason || "",
      message: o.message || o.note || "",
      at: Date.parse(o.lastTimestamp || o.eventTime || o.metadata.creationTimestamp) || 0,
      count: o.count || 1,
    };
  },
};
