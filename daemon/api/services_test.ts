import { DockError } from "../../client/errors.ts";
import { assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { serviceRoutes } from "./services.ts";

const WT = "/locations/app/worktrees/feat";

/** The service routes over fake services of worktree `app/feat` (one service, `web`), with no port open. */
function servicesApp() {
  const calls: string[] = [];
  const known = (location: string, worktree: string, name: string) => {
    if (`${location}/${worktree}/${name}` !== "app/feat/web") {
      throw new DockError("not_found", `no service ${name}`, { status: 404 });
    }
  };
  const act = (verb: string) => (location: string, worktree: string, name: string, origin: string) => {
    known(location, worktree, name);
    calls.push(`${verb} ${name} ${origin}`);
    return Promise.resolve({ name, state: verb } as never);
  };
  const { app } = boxTables([serviceRoutes({
    services: {
      list: (location, worktree) =>
        Promise.resolve([{ name: "web", location, worktree, state: "running" }] as never),
      start: act("start"),
      stop: act("stop"),
      restart: act("restart"),
      log: (location, worktree, name, options) => {
        known(location, worktree, name);
        return (async function* () {
          yield { line: `tail ${options?.tail} follow ${options?.follow}` };
        })() as never;
      },
      running: () => [] as never,
    },
    pauses: {
      pause: (location, worktree) => {
        calls.push(`pause ${location}/${worktree}`);
        return Promise.resolve({} as never);
      },
      resume: (location, worktree) => {
        calls.push(`resume ${location}/${worktree}`);
        return Promise.resolve({} as never);
      },
    },
    worktrees: { list: () => [] },
  })]);
  return { app, calls };
}

Deno.test("service routes: list (with ports), start, stop, restart, log, pause, resume, ports, services", async () => {
  const { app, calls } = servicesApp();
  const listed = await app.call("GET", `${WT}/services`);
  assertEquals([listed.status, listed.body[0].name, listed.body[0].ports], [200, "web", []]);
  for (const verb of ["start", "stop", "restart"]) {
    assertEquals((await app.call("POST", `${WT}/services/web/${verb}`)).body.state, verb);
  }
  assertEquals((await app.call("GET", `${WT}/services/web/log?tail=3`)).body, {
    line: "tail 3 follow false",
  });
  assertEquals((await app.call("POST", `${WT}/pause`)).status, 200);
  assertEquals((await app.call("POST", `${WT}/resume`)).status, 200);
  // The ports are the machine's own (`daemon/procs.ts` reads them): none belongs to a worktree here.
  const ports = await app.call("GET", "/ports");
  assertEquals([ports.status, Array.isArray(ports.body)], [200, true]);
  assertEquals((await app.call("GET", "/services")).body, []);
  assertEquals(calls, [
    "start web api",
    "stop web api",
    "restart web api",
    "pause app/feat",
    "resume app/feat",
  ]);
  app.assertEveryRouteSucceeded();
});

Deno.test("service routes: refusals (unknown services, tail bounds, wrong methods)", async () => {
  const { app, calls } = servicesApp();
  assertEquals((await app.call("POST", `${WT}/services/db/start`)).status, 404);
  assertEquals((await app.call("GET", `${WT}/services/db/log`)).status, 404);
  assertEquals((await app.call("GET", `${WT}/services/web/log?tail=100001`)).status, 400);
  assertEquals((await app.call("GET", `${WT}/services/web/start`)).status, 405);
  assertEquals((await app.call("DELETE", "/ports")).status, 405);
  assertEquals(calls, []);
});
