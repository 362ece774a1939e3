/**
 * Desktop (and installed-phone) notifications through the browser's Notification API for `agent.waiting`,
 * `agent.finished`, a flow's `notify` and an agent's `preview.open`, each switchable in the settings (kept
 * in the app settings document `notifications`). Permission is asked from the Needs you badge the first
 * time it is pressed (a browser asks only from a click), or from the button atop Needs you. A session's
 * notice says why it waits and in which worktree; a click brings the page forward with that session's
 * terminal open. Where the page cannot construct one (Chrome on Android: only a service worker may show
 * them) it goes through the app's service worker (`sw.js`), whose click the page hears as a message.
 *
 * @module
 */
import { signal } from "@preact/signals";
import type { Api } from "./api.ts";
import { boxes, onEvent, proxyPort } from "./store.ts";
import { openTerminal } from "./views.ts";
import { previewUrl, reasonText } from "./outage.ts";
import type { Session } from "../../client/wire.ts";

/** Which events notify. */
export interface NotifySettings {
  waiting: boolean;
  finished: boolean;
  flow: boolean;
  preview: boolean;
}

/** The switches, loaded from `/v1/app/notifications` in agent mode. */
export const notifySettings = signal<NotifySettings>({
  waiting: true,
  finished: true,
  flow: true,
  preview: true,
});

/** The browser's permission to notify, or `unsupported`. */
export const notifyPermission = signal<NotificationPermission | "unsupported">(currentPermission());

function currentPermission(): NotificationPermission | "unsupported" {
  return typeof Notification === "undefined" ? "unsupported" : Notification.permission;
}

/**
 * Asks the browser for permission to notify when it has not been asked yet (call it from a click: a
 * browser refuses to ask otherwise). What the person answers is kept by the browser, not asked again.
 */
export async function askNotifications(): Promise<void> {
  if (typeof Notification === "undefined" || Notification.permission !== "default") return;
  try {
    notifyPermission.value = await Notification.requestPermission();
  } catch {
    notifyPermission.value = currentPermission();
  }
}

/** Which switch an event falls under, if any. */
export function notifyKind(type: string): keyof NotifySettings | null {
  if (type === "agent.waiting") return "waiting";
  if (type === "agent.finished") return "finished";
  if (type === "notify") return "flow";
  if (type === "preview.open") return "preview";
  return null;
}

/** The app's service worker, once registered (none where the browser has none, or refuses it). */
let worker: ServiceWorkerRegistration | null = null;

/**
 * Registers the app's service worker (`/app/sw.js`: it makes the phone's page installable and shows
 * notices there; it caches nothing) and opens the session a click on its notice names.
 */
function startWorker(): void {
  const container = (navigator as Navigator & { serviceWorker?: ServiceWorkerContainer }).serviceWorker;
  if (!container) return;
  container.register("sw.js", { scope: "./" }).then((registration) => worker = registration, () => {});
  container.addEventListener("message", (event: MessageEvent) => {
    const data = event.data as { dock?: string; box?: unknown; session?: unknown } | null;
    if (data?.dock === "open" && typeof data.box === "string" && typeof data.session === "string") {
      openTerminal(data.box, data.session);
    }
  });
}

/** Shows a notice; `open` runs on a click (after the page is brought forward). */
function show(title: string, options: NotificationOptions, open?: { box: string; session: string }): void {
  try {
    const shown = new Notification(title, options);
    shown.onclick = () => {
      globalThis.focus();
      if (open) openTerminal(open.box, open.session);
      shown.close();
    };
  } catch {
    // Chrome on Android constructs none ("Illegal constructor"): its service worker shows it instead.
    worker?.showNotification(title, { ...options, data: open ? { dock: "open", ...open } : undefined })
      .catch(() => {});
  }
}

/** Where a session runs and why it waits, from the board's copy of it. */
function sessionOf(box: string, name: string): Session | undefined {
  return boxes.value[box]?.sessions.find((s) => s.name === name);
}

/** Starts notifying on new events while the page is hidden. */
export function startNotifications(api: Api): void {
  if (api.agent) {
    api.json<NotifySettings | null>(api.own("app/notifications")).then((saved) => {
      if (saved) notifySettings.value = { ...notifySettings.value, ...saved };
    }, () => {});
  }
  startWorker();
  const ownBox = api.agent ? undefined : (api.config as { box: string }).box;
  onEvent.add((event) => {
    const kind = notifyKind(event.type);
    if (!kind || !notifySettings.value[kind]) return;
    notifyPermission.value = currentPermission();
    if (notifyPermission.value !== "granted") return;
    if (document.visibilityState === "visible") return;
    const data = event.data ?? {};
    const box = event.box ?? ownBox ?? "laptop";
    if (kind === "preview") {
      const where = `${box}/${String(data.location)}/${String(data.worktree)}`;
      // Through the laptop's proxy, by the laptop's name for the box (the box's URL names itself).
      const url = api.agent && proxyPort.value !== null
        ? previewUrl({
          box,
          location: String(data.location),
          worktree: String(data.worktree),
          path: typeof data.path === "string" ? data.path : undefined,
        }, proxyPort.value)
        : String(data.url);
      const shown = new Notification(`Preview of ${where}`, { body: url, tag: `preview:${where}` });
      shown.onclick = () => globalThis.open(url, "_blank", "noopener");
      return;
    }
    if (kind === "flow") {
      show(String(data.title ?? `${box}: ${String(data.flow ?? "flow")}`), {
        body: String(data.text ?? ""),
        tag: `notify:${box}/${String(data.flow ?? "")}`,
      });
      return;
    }
    const name = String(data.session ?? "");
    const session = sessionOf(box, name);
    const where = session ? `${session.location}/${session.worktree}` : "";
    const reason = typeof data.reason === "string" ? data.reason as Session["reason"] : session?.reason;
    const title = kind === "waiting" ? `${box}/${name} needs you` : `${box}/${name} finished`;
    const why = kind === "waiting" ? reasonText(reason) : "finished its turn";
    show(title, {
      body: `${session?.agent ?? "The agent"} ${why}${where ? ` in ${where}` : ""}.`,
      tag: `${event.type}:${box}/${name}`,
    }, { box, session: name });
  });
}

/** Saves the switches. */
export async function saveNotifySettings(api: Api, next: NotifySettings): Promise<void> {
  notifySettings.value = next;
  if (api.agent) await api.json(api.own("app/notifications"), { method: "PUT", body: next });
}
