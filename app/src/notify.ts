/**
 * Desktop notifications through the browser's Notification API for `agent.waiting`, `agent.finished`, a
 * flow's `notify` and an agent's `preview.open` (a click opens the page), each switchable in the settings (kept in the app settings document `notifications`).
 *
 * @module
 */
import { signal } from "@preact/signals";
import type { Api } from "./api.ts";
import { onEvent } from "./store.ts";

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

/** Which switch an event falls under, if any. */
export function notifyKind(type: string): keyof NotifySettings | null {
  if (type === "agent.waiting") return "waiting";
  if (type === "agent.finished") return "finished";
  if (type === "notify") return "flow";
  if (type === "preview.open") return "preview";
  return null;
}

/** Starts notifying on new events while the page is hidden. */
export function startNotifications(api: Api): void {
  if (api.agent) {
    api.json<NotifySettings | null>(api.own("app/notifications")).then((saved) => {
      if (saved) notifySettings.value = { ...notifySettings.value, ...saved };
    }, () => {});
  }
  onEvent.add((event) => {
    const kind = notifyKind(event.type);
    if (!kind || !notifySettings.value[kind]) return;
    if (typeof Notification === "undefined" || Notification.permission !== "granted") return;
    if (document.visibilityState === "visible") return;
    const data = event.data ?? {};
    const who = `${event.box ?? "laptop"}/${String(data.session ?? data.flow ?? "")}`;
    if (kind === "preview") {
      const where = `${event.box ?? ""}/${String(data.location)}/${String(data.worktree)}`;
      const shown = new Notification(`Preview of ${where}`, {
        body: String(data.url),
        tag: `preview:${where}`,
      });
      shown.onclick = () => globalThis.open(String(data.url), "_blank", "noopener");
      return;
    }
    const title = kind === "flow" ? String(data.title ?? who) : `${who}: agent ${kind}`;
    const body = kind === "flow" ? String(data.text ?? "") : "";
    new Notification(title, { body, tag: `${event.type}:${who}` });
  });
}

/** Saves the switches. */
export async function saveNotifySettings(api: Api, next: NotifySettings): Promise<void> {
  notifySettings.value = next;
  if (api.agent) await api.json(api.own("app/notifications"), { method: "PUT", body: next });
}
