import { Hono } from "hono";
import { DockError, notFound } from "../../client/errors.ts";
import type { ExecResult, StreamLine, Worktree } from "../../client/wire.ts";
import type { GateContext } from "../../core/hooks.ts";
import { errorResponse, mount } from "../../core/http.ts";
import { assertEquals } from "../../tests/assert.ts";
import type { ExecJob } from "../exec.ts";
import { execRoutes, type ExecRoutesBackend } from "./exec.ts";
import { STDERR_LOG } from "../../core/log.ts";

const WORKTREE: Worktree = {
  name: "feat",
  location: "app",
  path: "/srv/app-feat",
  branch: "feat",
  main: false,
  origin: "dock",
  ports: [],
  setup: { state: "succeeded" },
  created: "2024-01-01T00:00:00.000Z",
};

/** The exec route in memory: one known worktree, a fake runner, a gate that refuses `rm` commands. */
function execApp() {
  const ran: ExecJob[] = [];
  const gated: { action: string; target: Record<string, unknown>; context: GateContext }[] = [];
  const backend: ExecRoutesBackend = {
    worktrees: {
      target: (spec) => {
        if (spec !== "app/feat") throw notFound("worktree", spec);
        return WORKTREE;
      },
    },
    exec: {
      run: (job): Promise<ExecResult> => {
        ran.push(job);
        return Promise.resolve({ exit_code: 0, output: `ran ${job.command}\n` });
      },
      stream: async function* (job): AsyncGenerator<StreamLine> {
        ran.push(job);
        yield { line: `ran ${job.command}` };
        yield { done: true, exit_code: 0 };
      },
    },
  };
  const app = new Hono();
  app.onError((error) => errorResponse(error, STDERR_LOG));
  mount(app, "/v1", [execRoutes(backend)], {
    gate: (action, target, context) => {
      gated.push({ action, target, context });
      if (String(target.command).startsWith("rm ")) {
        return Promise.reject(new DockError("gate_refused", "no rm here", { status: 403 }));
      }
      return Promise.resolve();
    },
  });
  const exec = (body: unknown, query = "") =>
    app.request(
      new Request(`http://box/v1/exec${query}`, {
        method: "POST",
        headers: { "x-dock-origin": "claude" },
        body: JSON.stringify(body),
      }),
    );
  return { ran, gated, exec };
}

Deno.test("exec route: a refusing gate answers 403 with its reason and nothing runs", async () => {
  const { ran, gated, exec } = execApp();
  const response = await exec({ location: "app/feat", command: "rm -rf /" });
  assertEquals(response.status, 403);
  assertEquals((await response.json()).error, { code: "gate_refused", message: "no rm here" });
  assertEquals(ran, []);
  assertEquals(gated, [{
    action: "exec",
    target: { location: "app/feat", command: "rm -rf /" },
    context: { origin: "claude", location: "app/feat", worktree: undefined },
  }]);
});

Deno.test("exec route: an allowed command runs once with its timeout, whole or streamed", async () => {
  const { ran, gated, exec } = execApp();
  const whole = await exec({ location: "app/feat", command: "make", timeout: "5s" });
  assertEquals([whole.status, await whole.json()], [200, { exit_code: 0, output: "ran make\n" }]);
  const streamed = await exec({ location: "app/feat", command: "make test" }, "?stream=1");
  assertEquals(streamed.headers.get("content-type"), "application/x-ndjson");
  assertEquals((await streamed.text()).trim().split("\n").map((line) => JSON.parse(line)), [
    { line: "ran make test" },
    { done: true, exit_code: 0 },
  ]);
  assertEquals(ran, [
    { location: "app/feat", command: "make", timeoutMs: 5000 },
    { location: "app/feat", command: "make test", timeoutMs: 10 * 60_000 },
  ]);
  assertEquals(gated.map((call) => call.target.command), ["make", "make test"]);
});

Deno.test("exec route: a bad body or an unknown worktree answers before the gate runs", async () => {
  const { ran, gated, exec } = execApp();
  const missing = await exec({ location: "app/feat" });
  assertEquals([missing.status, (await missing.json()).error.field], [400, "command"]);
  const slow = await exec({ location: "app/feat", command: "make", timeout: "2h" });
  assertEquals([slow.status, (await slow.json()).error.field], [400, "timeout"]);
  const unknown = await exec({ location: "app/nope", command: "make" });
  assertEquals([unknown.status, (await unknown.json()).error.code], [404, "not_found"]);
  assertEquals([ran, gated], [[], []]);
});
