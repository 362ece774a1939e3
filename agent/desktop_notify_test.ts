import { assertEquals } from "../tests/assert.ts";
import type { DockEvent } from "../client/wire.ts";
import { DesktopNotifier, type Notice, noticeCommand, noticeFor } from "./desktop_notify.ts";

function fakeBus() {
  const listeners = new Set<(event: DockEvent) => void>();
  return {
    subscribe(listener: (event: DockEvent) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    emit(type: string, data: Record<string, unknown> = {}, box?: string) {
      for (const listener of listeners) listener({ type, time: "2026-01-01T00:00:00Z", box, data });
    },
  };
}

Deno.test("desktop notices: only while no view is open, for waiting, finished and a flow's notify", () => {
  const bus = fakeBus();
  const shown: Notice[] = [];
  const notifier = new DesktopNotifier({ bus, show: (notice) => Promise.resolve(void shown.push(notice)) });
  notifier.start();
  bus.emit("agent.waiting", { session: "s1" }, "box1");
  bus.emit("agent.started", { session: "s1" }, "box1");
  const closeA = notifier.viewOpened();
  const closeB = notifier.viewOpened();
  bus.emit("agent.finished", { session: "s1" }, "box1");
  closeA();
  closeA(); // a second close of the same view counts once
  assertEquals(notifier.views, 1);
  bus.emit("agent.finished", { session: "s2" }, "box1");
  closeB();
  bus.emit("notify", { title: "Deploy", text: "done" }, "box1");
  bus.emit("agent.finished", { session: "s3" }, "box1");
  notifier.close();
  bus.emit("agent.waiting", { session: "s4" }, "box1");
  assertEquals(shown, [
    { title: "dock: box1/s1 needs you", body: "" },
    { title: "Deploy", body: "done" },
    { title: "dock: box1/s3 finished", body: "" },
  ]);
});

Deno.test("desktop notices: notify-send where it exists, osascript on macOS, nothing elsewhere", () => {
  const notice = { title: 'say "hi"', body: "b" };
  assertEquals(noticeCommand(notice, "linux", () => "/usr/bin/notify-send"), {
    cmd: "/usr/bin/notify-send",
    args: ["--app-name=dock", "--", 'say "hi"', "b"],
  });
  assertEquals(noticeCommand(notice, "linux", () => null), null);
  assertEquals(noticeCommand(notice, "darwin")?.args, [
    "-e",
    'display notification "b" with title "say \\"hi\\""',
  ]);
  assertEquals(noticeFor({ type: "session.sent", time: "" }), null);
});

Deno.test("desktop notices: a session started with open (session.open) says where it is, only with no view open", () => {
  const bus = fakeBus();
  const shown: Notice[] = [];
  const notifier = new DesktopNotifier({ bus, show: (notice) => Promise.resolve(void shown.push(notice)) });
  notifier.start();
  const close = notifier.viewOpened();
  bus.emit("session.open", { session: "s1" }, "box1"); // the open app brings it forward instead
  close();
  bus.emit("session.open", { session: "s2" }, "box1");
  bus.emit("session.open", {}, "box1"); // no session named: nothing to point at
  notifier.close();
  assertEquals(shown, [{
    title: "dock: box1/s2 was opened for you",
    body: "open the app, or attach: dock attach box1/s2",
  }]);
});
