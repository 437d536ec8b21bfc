// LineUp shell: the frames of running MiniApp instances, in the app area.
//
// The Runtime decides which instances run and which one is in front (dock.js shows
// that); this module gives each running instance one sandboxed frame (surface_host.js),
// kept while it runs, so an app in the background keeps its state and can still take
// the tool calls the Runtime routes to it. Only the focused instance's frame is shown.
// Every open shell tab runs its own frames; the Runtime takes the first answer to each
// call, so two tabs never answer twice. A frame is mounted by asking the Web Host
// ({op: "mount", instance_id}), which answers with a single-use URL on the surface
// origin; the frame's MiniApp SDK
// requests go up as {op: "app_call"} and their answers come back as "app_reply"; an
// "app_push" nudges the frame to ask again. A frame that reloads itself is untrusted
// from then on: it is dropped and mounted afresh, at most RELOAD_LIMIT times in
// RELOAD_WINDOW_MS (surface_host.js); one more and it stays down: the app area says the
// app keeps reloading and offers "Reopen" (the instance keeps running in the Runtime),
// and the Web Host hears {op: "surface_stopped"}. When an instance stops running, its
// frame goes (the Web Host has already taken its URL down).

import { $ } from "./dom.js";
import { t } from "./i18n.js";
import { mountSurface, reloadLimit } from "./surface_host.js";

// Why a frame could not be mounted: surfaces.unavailable.<code> in the catalogue.
const UNAVAILABLE = new Set(["surface_unavailable", "surface_invalid", "surface_too_large"]);

const frames = {
  send: () => false,
  // instance id -> { handle, mountId } | { pending: true } | { failed: code } | { stopped: true }
  mounts: new Map(),
  reloads: new Map(), // instance id -> its reloadLimit()
  byMount: new Map(), // mount id -> instance id
  apps: { records: [], focus: null },
};

export function initSurfaces({ send }) {
  frames.send = send;
}

function container() {
  return $("app-area-frame");
}

function drop(instanceId) {
  const entry = frames.mounts.get(instanceId);
  frames.mounts.delete(instanceId);
  if (!entry?.handle) return;
  entry.handle.unmount();
  frames.byMount.delete(entry.mountId);
  frames.send({ op: "unmount", mount_id: entry.mountId });
}

function request(instanceId) {
  if (frames.send({ op: "mount", instance_id: instanceId })) {
    frames.mounts.set(instanceId, { pending: true });
  }
}

function show() {
  const focus = frames.apps.focus;
  const area = container();
  let shown = null;
  for (const [instanceId, entry] of frames.mounts) {
    if (!entry.handle) continue;
    const visible = instanceId === focus;
    entry.handle.frame.hidden = !visible;
    if (visible) shown = entry;
  }
  const entry = frames.mounts.get(focus);
  area.classList.toggle("has-surface", Boolean(shown));
  area.dataset.stopped = String(Boolean(entry?.stopped));
  const placeholder = area.querySelector(".app-area-placeholder");
  placeholder.hidden = Boolean(shown);
  placeholder.replaceChildren();
  if (entry?.stopped) {
    const reopen = document.createElement("button");
    reopen.type = "button";
    reopen.className = "app-reopen";
    reopen.textContent = t("surfaces.reopen");
    reopen.addEventListener("click", () => {
      frames.mounts.delete(focus);
      frames.reloads.delete(focus);
      request(focus);
      show();
    });
    placeholder.append(t("surfaces.reloading"), " ", reopen);
  } else if (entry?.failed) {
    placeholder.textContent = UNAVAILABLE.has(entry.failed)
      ? t(`surfaces.unavailable.${entry.failed}`)
      : t("surfaces.failed");
  } else {
    placeholder.textContent = t("app_area.starting");
  }
}

// Every apps change (and the snapshot's): mount what runs, drop what stopped.
export function syncSurfaces(apps) {
  frames.apps = apps;
  const running = new Set(
    apps.records.filter((r) => r.state !== "stopping").map((r) => r.instance_id),
  );
  for (const instanceId of [...frames.mounts.keys()]) {
    if (!running.has(instanceId)) drop(instanceId);
  }
  for (const instanceId of [...frames.reloads.keys()]) {
    if (!running.has(instanceId)) frames.reloads.delete(instanceId);
  }
  for (const instanceId of running) {
    if (!frames.mounts.has(instanceId)) request(instanceId);
  }
  show();
}

// A new snapshot (a reconnect): the Web Host may have restarted and forgotten its
// mounts, so every frame is mounted afresh (apps keep their state in the Runtime).
export function resetSurfaces() {
  for (const instanceId of [...frames.mounts.keys()]) drop(instanceId);
}

export function onMounted(frame) {
  const instanceId = frame.instance_id;
  const entry = frames.mounts.get(instanceId);
  const running = frames.apps.records.some(
    (r) => r.instance_id === instanceId && r.state !== "stopping",
  );
  if (!entry?.pending || frame.outcome !== "accepted" || !running) {
    if (frame.mount_id) frames.send({ op: "unmount", mount_id: frame.mount_id });
    if (entry?.pending) frames.mounts.set(instanceId, { failed: frame.outcome });
    show();
    return;
  }
  const mountId = frame.mount_id;
  const handle = mountSurface(
    container(),
    { url: frame.url, instanceId, mountId },
    {
      // The app's own events (LineUpSurface.event): for the agent, if declared.
      onEvent: (name, data) => frames.send({ op: "app_event", mount_id: mountId, event: name, data }),
      onRequest: (id, method, params) => {
        if (!frames.send({ op: "app_call", mount_id: mountId, id, method, params })) {
          handle.respond(id, false, { code: "offline", message: t("surfaces.offline") });
        }
      },
      onReload: () => {
        // A frame that navigated or reloaded itself is a new, unverified document:
        // mounted afresh, unless it keeps doing so.
        if (!frames.reloads.has(instanceId)) frames.reloads.set(instanceId, reloadLimit());
        const again = frames.reloads.get(instanceId).spend();
        if (!again) frames.send({ op: "surface_stopped", mount_id: mountId }); // before unmount
        drop(instanceId);
        if (!again) frames.mounts.set(instanceId, { stopped: true });
        else if (frames.apps.focus === instanceId) request(instanceId);
        show();
      },
    },
    { app: true },
  );
  handle.frame.classList.add("app-frame");
  const record = frames.apps.records.find((r) => r.instance_id === instanceId);
  // Called as the dock calls it.
  handle.frame.setAttribute("title", t("surfaces.frame_title", { name: record?.label || instanceId }));
  frames.mounts.set(instanceId, { handle, mountId });
  frames.byMount.set(mountId, instanceId);
  show();
}

export function onAppReply(frame) {
  const instanceId = frames.byMount.get(frame.mount_id);
  const handle = instanceId && frames.mounts.get(instanceId)?.handle;
  if (!handle) return;
  if (frame.ok) handle.respond(frame.id, true, frame.result ?? null);
  else handle.respond(frame.id, false, frame.error || { code: "refused", message: "" });
}

export function onAppPush(frame) {
  for (const instanceId of frame.instance_ids || []) {
    frames.mounts.get(instanceId)?.handle?.push(frame.topic);
  }
}

// For tests and the overlay: the frame shown for an instance, if any.
export function frameOf(instanceId) {
  return frames.mounts.get(instanceId)?.handle?.frame || null;
}
