/**
 * A plugin's `ui` panel: its page in a frame sandboxed twice over (the frame's `sandbox` attribute and
 * the CSP the agent serves it with), so it runs in an origin of its own with no storage, no network and
 * nothing of the app's. It asks for data by `postMessage({ dock: "api", id, method, path, body })`; the
 * app makes the call through `POST plugins/{id}/ui-api`, where the plugin's granted scopes decide, and
 * answers `{ dock: "api", id, status, body }` (or `error`). The token never reaches the panel.
 *
 * @module
 */
import { useEffect, useRef } from "preact/hooks";
import type { PanelApiResult, PluginInfo } from "../../client/wire.ts";
import { type Api, ApiError } from "./api.ts";

/** What a panel sends. */
interface PanelMessage {
  dock: "api";
  id: number;
  method: string;
  path: string;
  body?: unknown;
}

function isPanelMessage(data: unknown): data is PanelMessage {
  const m = data as PanelMessage;
  return typeof m === "object" && m !== null && m.dock === "api" && typeof m.id === "number" &&
    typeof m.method === "string" && typeof m.path === "string";
}

/** The page files of a plugin's `ui` a panel can show (folders and other files are its assets). */
export function panelPages(plugin: PluginInfo): string[] {
  return (plugin.ui ?? []).filter((file) => file.endsWith(".html"));
}

/** One panel of `plugin`, `file` one of its `ui` pages; `base` its API path (laptop's or relayed). */
export function PluginPanel(props: { api: Api; plugin: PluginInfo; file: string; base: string }) {
  const frame = useRef<HTMLIFrameElement>(null);
  useEffect(() => {
    const onMessage = async (event: MessageEvent) => {
      const target = frame.current?.contentWindow;
      // Only this frame's messages: another panel is answered by its own listener.
      if (!target || event.source !== target || !isPanelMessage(event.data)) return;
      const { id, method, path, body } = event.data;
      let reply: Record<string, unknown>;
      try {
        const result = await props.api.json<PanelApiResult>(`${props.base}/ui-api`, {
          method: "POST",
          body: { method, path, body },
        });
        reply = { dock: "api", id, status: result.status, body: result.body };
      } catch (error) {
        const status = error instanceof ApiError ? error.status : 0;
        reply = { dock: "api", id, status, error: (error as Error).message };
      }
      // The panel's origin is opaque ("null"): "*" is the only target that reaches it, and the
      // answer holds only what the plugin may see anyway.
      target.postMessage(reply, "*");
    };
    addEventListener("message", onMessage);
    return () => removeEventListener("message", onMessage);
  }, [props.base]);
  const path = props.file.split("/").map(encodeURIComponent).join("/");
  const src = `/app/plugins/${encodeURIComponent(props.plugin.where)}/${
    encodeURIComponent(props.plugin.id)
  }/${path}`;
  return (
    <iframe
      ref={frame}
      class="panel-frame"
      sandbox="allow-scripts"
      src={src}
      title={`${props.plugin.name ?? props.plugin.id}: ${props.file}`}
      data-panel={`${props.plugin.where}/${props.plugin.id}/${props.file}`}
    />
  );
}
