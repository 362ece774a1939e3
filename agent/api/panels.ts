/**
 * `GET /app/plugins/{where}/{id}/{file}`: a file of a plugin's `ui` panel, where `where` is `laptop` or
 * a box's name, for the app to show in a sandboxed frame. Like the app's own files it needs no token
 * (a frame cannot send one) and holds no data: only files the manifest lists under `ui`, only of an
 * enabled plugin, each with the panel's sandboxing headers (`core/static.ts` `PANEL_CSP`). A box's
 * plugin's file comes through this laptop's pairing with the box.
 *
 * @module
 */
import type { Context } from "hono";
import { DockError } from "../../client/errors.ts";
import { forwardPath, invalidPath, wildcardSegments } from "../../core/forward_path.ts";
import { panelHeaders } from "../../core/static.ts";
import type { Boxes } from "../boxes.ts";
import type { Plugins } from "../../plugins/plugins.ts";

/** What serving panels uses of the agent. */
export interface PanelBackend {
  plugins: Pick<Plugins, "isOn" | "file">;
  boxes: Pick<Boxes, "has" | "client">;
}

/**
 * The answer to a GET or HEAD of a panel's file. Its box, plugin and file come from the path as it came,
 * each segment checked in `core/forward_path.ts`: the file of a box's plugin is fetched with this
 * laptop's credential, so a path that climbed (`x%2F..%2F..%2Fsessions`) would read the box's whole
 * API without a token.
 */
export async function panelFile(agent: PanelBackend, c: Context): Promise<Response> {
  const [where, id, ...file] = wildcardSegments(c);
  if (id === undefined || file.length === 0) throw invalidPath("a panel's path is {where}/{plugin}/{file}");
  const gone = () => new DockError("not_found", `no enabled plugin '${id}' on ${where}`, { status: 404 });
  let answer: Response;
  if (where === "laptop") {
    if (!agent.plugins.isOn(id)) throw gone();
    answer = await agent.plugins.file(id, file.join("/"));
  } else {
    if (!agent.boxes.has(where)) throw gone();
    const client = agent.boxes.client(where);
    const info = await client.plugin(id, 0).catch(() => null);
    if (!info?.enabled || info.error) throw gone();
    answer = await client.transport.fetch(forwardPath(`/v1/plugins/${encodeURIComponent(id)}/`, file));
    if (!answer.ok) {
      await answer.body?.cancel();
      throw new DockError("not_found", `plugin '${id}' on ${where} does not offer ${file.join("/")}`, {
        status: 404,
      });
    }
  }
  const headers = panelHeaders(answer.headers.get("content-type") ?? "application/octet-stream");
  if (c.req.method === "HEAD") {
    await answer.body?.cancel();
    return new Response(null, { headers });
  }
  return new Response(answer.body, { headers });
}
