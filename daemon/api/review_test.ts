import { DockError } from "../../client/errors.ts";
import { assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { reviewRoutes } from "./review.ts";

const WT = "/locations/app/worktrees/feat";

/** The review routes over a fake review that knows one worktree, `app/feat`, and records each call. */
function reviewApp() {
  const calls: string[] = [];
  const known = (name: string, wt: string, what: string, value: unknown = {}) => {
    if (`${name}/${wt}` !== "app/feat") {
      return Promise.reject(new DockError("not_found", `no worktree ${name}/${wt}`, { status: 404 }));
    }
    calls.push(what);
    return Promise.resolve(value as never);
  };
  const { app } = boxTables([reviewRoutes({
    review: {
      list: (options) =>
        Promise.resolve([{ all: options?.all, location: options?.location ?? null }] as never),
      preview: (request, origin) => {
        calls.push(
          `preview ${request.location}/${request.worktree}:${request.port}${request.path} ${origin}`,
        );
        return {} as never;
      },
      diff: (name, wt, options) =>
        known(name, wt, `diff ${options?.offset} ${options?.maxBytes} ${options?.path}`, { files: [] }),
      commits: (name, wt) => known(name, wt, "commits", []),
      untracked: (name, wt) => known(name, wt, "untracked", []),
      push: (name, wt) => known(name, wt, "push"),
      pr: (name, wt) => known(name, wt, "pr", null),
      createPr: (name, wt, request) => known(name, wt, `create-pr ${request?.title} ${request?.draft}`),
    },
  })]);
  return { app, calls };
}

Deno.test("review routes: the list, a preview, the diff (paged), commits, untracked, push, a PR", async () => {
  const { app, calls } = reviewApp();
  assertEquals((await app.call("GET", "/review?all=1&location=app")).body, [{ all: true, location: "app" }]);
  assertEquals(
    (await app.call("POST", "/preview", {
      json: { location: "app", worktree: "feat", port: 3000, path: "/x" },
    })).status,
    200,
  );
  assertEquals((await app.call("GET", `${WT}/diff?offset=2&max_bytes=2048&path=a.ts`)).status, 200);
  assertEquals((await app.call("GET", `${WT}/commits`)).status, 200);
  assertEquals((await app.call("GET", `${WT}/untracked`)).status, 200);
  assertEquals((await app.call("POST", `${WT}/push`)).status, 200);
  assertEquals((await app.call("POST", `${WT}/push`, { json: {} })).status, 200);
  assertEquals((await app.call("GET", `${WT}/pr`)).status, 200);
  assertEquals((await app.call("POST", `${WT}/pr`, { json: { title: "Fix", draft: true } })).status, 201);
  assertEquals((await app.call("POST", `${WT}/pr`)).status, 201);
  assertEquals(calls, [
    "preview app/feat:3000/x api",
    "diff 2 2048 a.ts",
    "commits",
    "untracked",
    "push",
    "push",
    "pr",
    "create-pr Fix true",
    "create-pr undefined undefined",
  ]);
  app.assertEveryRouteSucceeded();
});

Deno.test("review routes: refusals (strict bodies, bounds, unknown worktrees)", async () => {
  const { app, calls } = reviewApp();
  await app.refusesUnknownField("POST", "/preview", { location: "app", worktree: "feat" });
  await app.refusesUnknownField("POST", `${WT}/push`, {});
  await app.refusesUnknownField("POST", `${WT}/pr`, { title: "x" });
  assertEquals(
    (await app.call("POST", "/preview", { json: { location: "app", worktree: "feat", path: "/a b" } }))
      .status,
    400,
  );
  assertEquals((await app.call("POST", `${WT}/pr`, { json: { title: "" } })).status, 400);
  assertEquals((await app.call("POST", `${WT}/pr`, { json: { body: "a\u0000b" } })).status, 400);
  assertEquals((await app.call("GET", `${WT}/diff?max_bytes=10`)).status, 400);
  assertEquals((await app.call("GET", `${WT}/diff?offset=-1`)).status, 400);
  assertEquals((await app.call("GET", "/locations/app/worktrees/ghost/commits")).status, 404);
  assertEquals(calls, []);
});
