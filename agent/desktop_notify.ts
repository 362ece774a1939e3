/**
 * `dock agent` tells the person through the OS (`notify-send`, `osascript`) when an agent waits or
 * finishes, a flow's `notify` step speaks, or a session is started with `open` (`session.open`), but only while no app view is open: an open view notifies
 * through the browser itself, and twice would be noise. Closing the browser loses nothing. A view is
 * an open `GET /v1/events` stream whose request says `x-dock-origin: app`.
 *
 * @module
 */
import type { DockEvent } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import { run, which } from "../core/runner.ts";

/** What a notification says. */
export interface Notice {
  title: string;
  body: string;
}

/** Options of {@linkcode DesktopNotifier}. */
export interface DesktopNotifierOptions {
  bus: Pick<EventBus, "subscribe">;
  /** Shows a notice. @default {the OS's notifier through the runner: {@linkcode showNotice}} */
  show?: (notice: Notice) => Promise<void>;
}

/** The notice an event deserves, or null. Identifiers only: events carry no prompt text. */
export function noticeFor(event: DockEvent): Notice | null {
  const data = event.data ?? {};
  const where = [event.box, typeof data.session === "string" ? data.session : null].filter(Boolean).join("/");
  if (event.type === "agent.waiting") return { title: `dock: ${where || "an agent"} needs you`, body: "" };
  if (event.type === "agent.finished") return { title: `dock: ${where || "an agent"} finished`, body: "" };
  // `POST sessions` with `open`: the app would bring its terminal forward; with no app open, say where.
  if (event.type === "session.open" && event.box && typeof data.session === "string") {
    return {
      title: `dock: ${where} was opened for you`,
      body: `open the app, or attach: dock attach ${where}`,
    };
  }
  if (event.type === "notify" && typeof data.title === "string") {
    return { title: data.title, body: typeof data.text === "string" ? data.text : "" };
  }
  return null;
}

/** The command that shows `notice` on this OS, or null when it has none. */
export function noticeCommand(
  notice: Notice,
  os: string = Deno.build.os,
  find: (name: string) => string | null = which,
): { cmd: string; args: string[] } | null {
  if (os === "darwin") {
    const quote = (text: string) => JSON.stringify(text); // AppleScript strings take JSON's escapes
    return {
      cmd: "osascript",
      args: ["-e", `display notification ${quote(notice.body)} with title ${quote(notice.title)}`],
    };
  }
  const notifySend = find("notify-send");
  return notifySend ? { cmd: notifySend, args: ["--app-name=dock", "--", notice.title, notice.body] } : null;
}

/** Shows `notice` through the OS; a machine without a notifier (a server, CI) shows nothing. */
export async function showNotice(notice: Notice): Promise<void> {
  const command = noticeCommand(notice);
  if (!command) return;
  await run(command.cmd, command.args, { timeoutMs: 5000, group: false }).catch(() => {});
}

/** Notifies through the OS while no view is open. */
export class DesktopNotifier {
  #options: DesktopNotifierOptions;
  #views = 0;
  #unsubscribe?: () => void;

  constructor(options: DesktopNotifierOptions) {
    this.#options = options;
  }

  /** How many app views follow the events now. */
  get views(): number {
    return this.#views;
  }

  /** Counts a view open until the returned function is called (once). */
  viewOpened(): () => void {
    this.#views++;
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      this.#views--;
    };
  }

  /** Starts listening to the bus. */
  start(): void {
    const show = this.#options.show ?? showNotice;
    this.#unsubscribe = this.#options.bus.subscribe((event) => {
      if (this.#views > 0) return;
      const notice = noticeFor(event);
      if (notice) show(notice).catch(() => {});
    });
  }

  /** Stops listening. */
  close(): void {
    this.#unsubscribe?.();
  }
}
