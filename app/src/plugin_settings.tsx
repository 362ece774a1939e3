/**
 * A plugin's settings form, built from its manifest's `config` schema (`GET …/plugins/{id}/config`):
 * one field per property (a checkbox, a number, a choice, a text; a secret as its reference, such as
 * `env://NAME`, never its value), saved whole with `PUT …/config`. And the button that opens a plugin's
 * `fn` page in a new tab through a short-lived signed link (`POST /v1/plugins/{id}/fn-link`): the token
 * never goes into a URL.
 *
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import type { PluginConfig, PluginFnLink, PluginInfo } from "../../client/wire.ts";
import type { Api } from "./api.ts";

type Property = {
  type: "string" | "number" | "integer" | "boolean";
  description?: string;
  default?: string | number | boolean;
  enum?: (string | number)[];
  secret?: boolean;
};

/** The settings form of one plugin; `base` is its API path (the laptop's or its box's). */
export function PluginSettings(props: { api: Api; base: string; onDone: () => void }) {
  const [config, setConfig] = useState<PluginConfig | null>(null);
  const [draft, setDraft] = useState<Record<string, string | number | boolean>>({});
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    props.api.json<PluginConfig>(`${props.base}/config`).then((c) => {
      setConfig(c);
      setDraft({ ...c.values });
    }, (e) => setError((e as Error).message));
  }, [props.base]);
  if (error && !config) return <p class="error">{error}</p>;
  if (!config) return null;
  const properties = ((config.schema as { properties?: Record<string, Property> } | undefined)?.properties) ??
    {};
  if (Object.keys(properties).length === 0) return <p class="muted">This plugin has no settings.</p>;
  const set = (key: string, value: string | number | boolean | undefined) => {
    const next = { ...draft };
    if (value === undefined || value === "") delete next[key];
    else next[key] = value;
    setDraft(next);
  };
  const save = async () => {
    try {
      await props.api.json(`${props.base}/config`, { method: "PUT", body: { values: draft } });
      setError(null);
      props.onDone();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <form
      class="plugin-settings"
      onSubmit={(e) => {
        e.preventDefault();
        save();
      }}
    >
      {Object.entries(properties).map(([key, p]) => (
        <label key={key} data-setting={key}>
          <span>
            {key}
            {config.schema && ((config.schema.required as string[] | undefined) ?? []).includes(key)
              ? " *"
              : ""}
          </span>
          {p.type === "boolean"
            ? (
              <input
                type="checkbox"
                checked={(draft[key] ?? p.default) === true}
                onChange={(e) => set(key, (e.target as HTMLInputElement).checked)}
              />
            )
            : p.enum
            ? (
              <select
                value={String(draft[key] ?? p.default ?? "")}
                onChange={(e) => {
                  const text = (e.target as HTMLSelectElement).value;
                  set(key, p.enum!.find((v) => String(v) === text));
                }}
              >
                <option value="">—</option>
                {p.enum.map((v) => <option key={String(v)} value={String(v)}>{String(v)}</option>)}
              </select>
            )
            : (
              <input
                type="text"
                inputMode={p.type === "string" ? "text" : p.type === "integer" ? "numeric" : "decimal"}
                placeholder={p.secret ? "env://NAME (a reference, never the value)" : String(p.default ?? "")}
                value={draft[key] === undefined ? "" : String(draft[key])}
                onInput={(e) => {
                  const text = (e.target as HTMLInputElement).value;
                  set(key, p.type === "string" || text === "" ? text : Number(text));
                }}
              />
            )}
          {p.description && <small class="muted">{p.description}</small>}
        </label>
      ))}
      {error && <p class="error">{error}</p>}
      <button type="submit">Save</button>
      <button type="button" onClick={props.onDone}>Cancel</button>
    </form>
  );
}

/** Opens a plugin's `fn` page in a new tab through a signed link (the laptop agent signs it). */
export async function openFnPage(api: Api, plugin: PluginInfo): Promise<void> {
  // Opened first, while the click still counts as the user's: a tab opened after an await is a popup.
  const tab = globalThis.open("about:blank", "_blank");
  try {
    const link = await api.json<PluginFnLink>(api.own(`plugins/${encodeURIComponent(plugin.id)}/fn-link`), {
      method: "POST",
      body: { where: plugin.where },
    });
    if (tab) tab.location.href = link.url;
  } catch (error) {
    tab?.close();
    throw error;
  }
}
