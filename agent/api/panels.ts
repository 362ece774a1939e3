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
import { PANEL_PREFIX, panelHeaders } from "../../core/static.ts";
import type { Boxes } from "../boxes.ts";
import type { Plugins } from "../../plugins/plugins.ts";

/** What serving panels uses of the agent. */
export interface PanelBackend {
  plugins: Pick<Plugins, "isOn" | "file">;
  boxes: Pick<Boxes, "has" | "client">;
}

/** The answer to a GET or HEAD of a panel's file. */
export async function panelFile(agent: PanelBackend, c: Context): Promise<Response> {
  const [where, id, ...rest] = new URL(c.req.url).pathname.slice(PANEL_PREFIX.length).split("/");
  let path: string;
  try {
    path = rest.map(decodeURIComponent).join("/");
  } catch {
    throw new DockError("invalid_path", "malformed escapes in the panel's path", { status: 400 });
  }
  const gone = () => new DockError("not_found", `no enabled plugin '${id}' on ${where}`, { status: 404 });
  let file: Response;
  if (where === "laptop") {
    if (!agent.plugins.isOn(id)) throw gone();
    file = await agent.plugins.file(id, path);
  } else {
    if (!where || !agent.boxes.has(where)) throw gone();
    const client = agent.boxes.client(where);
    const info = await client.plugin(id, 0).catch(() => null);
    if (!info?.enabled || info.error) throw gone();
    file = await client.transport.fetch(
      `/v1/plugins/${encodeURIComponent(id)}/${path.split("/").map(encodeURIComponent).join("/")}`,
    );
  }
  const headers = panelHeaders(file.headers.get("content-type") ?? "application/octet-stream");
  if (c.req.method === "HEAD") {
    await file.body?.cancel();
    return new Response(null, { headers });
  }
  return new Response(file.body, { headers });
}
