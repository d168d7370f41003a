// A claim's path from class to container, step by step, read from the objects the API holds
// and the events that explain them. Each step is done, in progress, failed, waiting, or does
// not apply ("none"), with what it names, how long it took (or has been going on), and the
// event that explains a step that failed or waits, in the words Kubernetes' components use.
"use strict";

const Pipeline = (() => {
  const kSteps = [
    { id: "class", title: "Class" },
    { id: "provisioner", title: "Provisioner" },
    { id: "volume", title: "PV" },
    { id: "attachment", title: "Attachment" },
    { id: "node", title: "Node" },
    { id: "staged", title: "Staged" },
    { id: "published", title: "Published" },
    { id: "pods", title: "Pods" },
    { id: "containers", title: "Containers" },
  ];

  const step = (id, state, label, extra) =>
    Object.assign({ id, state, label: label || "", why: "", took: null, since: null }, extra || {});

  // The latest event about the object `uid` whose reason is one of `reasons`.
  function latest(idx, uid, reasons) {
    const evs = idx.eventsByUid.get(uid);
    if (!evs) return null;
    for (let i = evs.length - 1; i >= 0; i--) {
      if (!reasons || reasons.includes(evs[i].reason)) return evs[i];
    }
    return null;
  }

  function classStep(c, idx) {
    let name = c.className;
    if (name === undefined || name === null) {
      const def = [...idx.classes.values()].find((k) => k.isDefault);
      name = def ? def.name : "";
    }
    if (name === "") return [step("class", c.volumeName ? "none" : "waiting", "(none)"), null];
    const cls = idx.classes.get(name);
    if (!cls) {
      const ev = latest(idx, c.uid, ["ProvisioningFailed"]);
      return [step("class", c.phase === "Bound" ? "done" : "failed", name, {
        why: ev ? ev.message : `storageclass.storage.k8s.io "${name}" not found`,
      }), null];
    }
    return [step("class", "done", name, { detail: cls.bindingMode }), cls];
  }

  function provisionerStep(c, cls, pv, idx, now) {
    const who = cls ? cls.provisioner : "";
    if (c.phase === "Lost") {
      const ev = latest(idx, c.uid, ["ClaimLost"]);
      return step("provisioner", "failed", who, { why: ev ? ev.message : "the claim lost its volume" });
    }
    if (pv) {
      if (!pv.provisionedBy) return step("provisioner", "none", "pre-provisioned");
      return step("provisioner", "done", pv.provisionedBy, { took: pv.created - c.created });
    }
    if (c.volumeName) return step("provisioner", "progress", who, { since: c.created });
    const ev = latest(idx, c.uid, ["WaitForFirstConsumer", "ExternalProvisioning", "Provisioning",
      "ProvisioningFailed", "FailedBinding"]);
    if (!ev) return step("provisioner", cls ? "progress" : "waiting", who, { since: c.created });
    switch (ev.reason) {
      case "WaitForFirstConsumer":
        if (c.selectedNode) return step("provisioner", "progress", who, { since: c.created });
        return step("provisioner", "waiting", who, { why: ev.message, since: c.created });
      case "ExternalProvisioning":
      case "FailedBinding":
        return step("provisioner", "waiting", who, { why: ev.message, since: c.created });
      case "ProvisioningFailed":
        return step("provisioner", "failed", who, { why: ev.message, since: c.created });
      default:
        return step("provisioner", "progress", who, { why: ev.message, since: c.created });
    }
  }

  function volumeStep(c, pv, idx) {
    if (!c.volumeName) return step("volume", "waiting", "");
    if (!pv) return step("volume", "progress", c.volumeName);
    if (pv.phase === "Failed") {
      const ev = latest(idx, pv.uid, null);
      return step("volume", "failed", pv.name, { why: pv.message || (ev ? ev.message : "") });
    }
    if (c.phase === "Bound" && pv.phase === "Bound") {
      return step("volume", "done", pv.name, { detail: pv.capacity || c.capacity });
    }
    return step("volume", "progress", pv.name, { detail: pv.phase, since: pv.created });
  }

  // The pods that use the claim, those still running first.
  function podsOf(c, idx) {
    const pods = idx.podsByClaim.get(c.namespace + "/" + c.name);
    return pods.sort((a, b) =>
      (a.deleting - b.deleting) || (a.node ? 0 : 1) - (b.node ? 0 : 1) || a.created - b.created);
  }

  function attachmentStep(pv, pod, idx, now) {
    if (!pv) return step("attachment", "waiting", "");
    const multi = pod ? latest(idx, pod.uid, ["FailedAttachVolume", "SuccessfulAttachVolume"]) : null;
    if (multi && multi.reason === "FailedAttachVolume") {
      return step("attachment", "failed", pod.node, { why: multi.message, since: pod.scheduledAt });
    }
    if (pv.kind !== "csi") return step("attachment", "none", "not attachable");
    const vas = idx.attachmentsByVolume.get(pv.name);
    const va = vas.find((v) => pod && v.node === pod.node) || vas[0];
    if (!va) {
      const drv = idx.csiDrivers.get(pv.driver);
      if (drv && !drv.attachRequired) return step("attachment", "none", "not required");
      if (!pod || !pod.node) return step("attachment", "waiting", "");
      return step("attachment", "progress", pod.node, { since: pod.scheduledAt });
    }
    if (va.attachError) return step("attachment", "failed", va.name, { why: va.attachError, since: va.created });
    if (va.detachError) return step("attachment", "failed", va.name, { why: va.detachError });
    if (va.attached) {
      const ok = multi && multi.reason === "SuccessfulAttachVolume" ? multi.at - va.created : null;
      return step("attachment", "done", va.node, { took: ok !== null && ok >= 0 ? ok : null, link: va.name });
    }
    return step("attachment", "progress", va.node, { since: va.created, link: va.name });
  }

  function nodeStep(c, pods, pod, idx) {
    if (pod && pod.node) return step("node", "done", pod.node, { took: pod.scheduledAt ? pod.scheduledAt - pod.created : null });
    if (pods.length) {
      const ev = latest(idx, pods[0].uid, ["FailedScheduling"]);
      return step("node", "waiting", c.selectedNode, {
        why: ev ? ev.message : pods[0].unschedulable, since: pods[0].created,
      });
    }
    if (c.selectedNode) return step("node", "progress", c.selectedNode);
    return step("node", "waiting", "", { why: "no pod uses the claim" });
  }

  const started = (pod) => pod.statuses.some((s) => s.running || s.terminated) ||
    pod.phase === "Running" || pod.phase === "Succeeded";
  const firstStart = (pod) => {
    let t = 0;
    for (const s of pod.statuses) {
      const at = s.running || (s.terminated && s.terminated.at) || 0;
      if (at && (!t || at < t)) t = at;
    }
    return t;
  };

  // Staging (MountDevice) and publishing (SetUp): from the node's volumesInUse and the pod's
  // mount events and containers.
  function mountSteps(pv, pod, idx) {
    if (!pod || !pod.node || !pv) return [step("staged", "waiting", ""), step("published", "waiting", "")];
    const node = idx.nodes.get(pod.node);
    const inUse = !!node && node.inUse.some((u) => u.endsWith("/" + pv.name));
    const failed = latest(idx, pod.uid, ["FailedMount", "FailedMapVolume"]);
    const up = started(pod);
    const failedDevice = failed && !up && /MountDevice|WaitForAttach|MapVolume.MapPodDevice/.test(failed.message);
    let staged;
    if (failedDevice) staged = step("staged", "failed", pod.node, { why: failed.message });
    else if (inUse) staged = step("staged", up ? "done" : "progress", pod.node, { since: up ? null : pod.scheduledAt });
    else staged = step("staged", up ? "none" : "waiting", up ? "not staged" : "");
    let published;
    if (up) {
      const t = firstStart(pod);
      published = step("published", "done", pod.name, { took: t && pod.scheduledAt ? t - pod.scheduledAt : null });
    } else if (failed && !failedDevice) {
      published = step("published", "failed", pod.name, { why: failed.message, since: pod.scheduledAt });
    } else {
      published = step("published", failedDevice ? "waiting" : "progress", pod.name, { since: pod.scheduledAt });
    }
    return [staged, published];
  }

  function podsStep(pods) {
    if (!pods.length) return step("pods", "waiting", "none");
    const label = pods.map((p) => p.name + " " + (p.deleting ? "Terminating" : p.phase)).join(", ");
    if (pods.some((p) => p.phase === "Failed")) return step("pods", "failed", label);
    if (pods.every((p) => p.phase === "Running" || p.phase === "Succeeded")) return step("pods", "done", label);
    return step("pods", "progress", label, { since: pods[0].created });
  }

  const kBadWaits = new Set(["CrashLoopBackOff", "ErrImagePull", "ImagePullBackOff", "CreateContainerError",
    "CreateContainerConfigError", "RunContainerError", "InvalidImageName", "ErrImageNeverPull"]);

  function containersStep(pods) {
    if (!pods.length) return step("containers", "waiting", "");
    let total = 0;
    let running = 0;
    let bad = null;
    let waiting = null;
    let done = 0;
    for (const p of pods) {
      total += p.containers;
      for (const s of p.statuses) {
        if (s.running) running++;
        else if (s.terminated && s.terminated.exitCode === 0) done++;
        else if (s.terminated) bad = bad || `${s.name}: ${s.terminated.reason || "exit"} (${s.terminated.exitCode})`;
        else if (s.waiting && kBadWaits.has(s.waiting.reason)) {
          bad = bad || `${s.name}: ${s.waiting.reason}${s.waiting.message ? ": " + s.waiting.message : ""}`;
        } else if (s.waiting) waiting = waiting || s.waiting.reason;
      }
    }
    const label = `${running}/${total} running`;
    if (bad) return step("containers", "failed", label, { why: bad });
    if (running + done === total && total > 0) return step("containers", "done", label);
    return step("containers", "progress", label, { detail: waiting || "" });
  }

  // The row of claim `c`: its steps, and the first explanation of a step that failed or waits.
  function row(c, idx, now) {
    const [cls, klass] = classStep(c, idx);
    const pv = c.volumeName ? idx.volumes.get(c.volumeName) : null;
    const pods = podsOf(c, idx);
    const pod = pods.find((p) => p.node && !p.deleting) || pods.find((p) => p.node) || null;
    const [staged, published] = mountSteps(pv, pod, idx);
    const steps = [
      cls,
      provisionerStep(c, klass, pv, idx, now),
      volumeStep(c, pv, idx),
      attachmentStep(pv, pod, idx, now),
      nodeStep(c, pods, pod, idx),
      staged,
      published,
      podsStep(pods),
      containersStep(pods),
    ];
    const why = steps.find((s) => s.why && (s.state === "failed" || s.state === "waiting"));
    const state = steps.some((s) => s.state === "failed") ? "failed"
      : steps.every((s) => s.state === "done" || s.state === "none") ? "done"
      : steps.some((s) => s.state === "progress") ? "progress" : "waiting";
    return { key: c.namespace + "/" + c.name, claim: c, pv, pods, pod, steps, why, state };
  }

  return { kSteps, row };
})();
