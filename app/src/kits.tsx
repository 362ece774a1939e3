/**
 * Kits: the laptop's library, which box locations run which kit (an older one flagged, updated in one
 * click), and applying a kit to a location after its preview (what changes in the effective config,
 * its files, its warnings). Agent mode only: the library lives on the laptop.
 *
 * @module
 */
import { useState } from "preact/hooks";
import type { KitInstallation, KitPreview, KitSummary, KitUpdate } from "../../client/wire.ts";
import type { Api } from "./api.ts";
import { boxes, eventsSeen } from "./store.ts";
import { useJson } from "./use_json.ts";
import { useOutcome } from "./outcome.ts";

/** The library, the locations running kits, and the apply form. */
export function KitsView(props: { api: Api }) {
  const { api } = props;
  const changes = eventsSeen("kit.");
  const [library, libraryError, reloadLibrary] = useJson<KitSummary[]>(api, api.own("kits"), [changes]);
  const [installed, installedError, reloadInstalled] = useJson<KitInstallation[]>(
    api,
    api.own("kits/installed"),
    [changes],
  );
  const [message, run] = useOutcome();
  const act = (call: () => Promise<string>) =>
    run(call, () => {
      reloadInstalled();
      reloadLibrary();
    });
  return (
    <div class="kits">
      {message && <p class={message.error ? "error" : "muted"} role="status">{message.text}</p>}
      <section class="card">
        <h2>Library</h2>
        {libraryError && <p class="error">{libraryError}</p>}
        {library?.length === 0 && <p class="muted">No kits yet: `dock kit add FOLDER|FILE|GIT-URL`.</p>}
        <ul class="list">
          {(library ?? []).map((kit) => (
            <li key={kit.id} class="kit" data-kit={kit.id}>
              <strong>{kit.name}</strong> <span class="muted">{kit.id} · {kit.version ?? "no version"}</span>
              {kit.match?.slug && <span class="tag">{kit.match.slug}</span>}
              <span class="muted">{kit.files.length} files</span>
              {kit.description && <span class="muted">{kit.description}</span>}
              {kit.error && <span class="error">{kit.error}</span>}
            </li>
          ))}
        </ul>
      </section>
      <section class="card">
        <h2>Running</h2>
        {installedError && <p class="error">{installedError}</p>}
        {installed?.length === 0 && <p class="muted">No location runs a kit.</p>}
        <ul class="list">
          {(installed ?? []).map((kit) => (
            <li
              key={`${kit.box}/${kit.location}`}
              class="installed"
              data-installed={`${kit.box}/${kit.location}`}
            >
              <strong>{kit.box}/{kit.location}</strong> <span>{kit.id} {kit.version ?? ""}</span>
              {kit.older && (
                <>
                  <span class="tag older" data-older="1">library has {kit.library}</span>
                  <button
                    type="button"
                    class="small"
                    data-action="update"
                    onClick={() =>
                      act(async () => {
                        const done = await api.json<KitUpdate>(
                          api.own(`kits/${encodeURIComponent(kit.id)}/update`),
                          {
                            method: "POST",
                          },
                        );
                        const failed = done.failed.map((f) => `${f.box}/${f.location}: ${f.error}`);
                        if (failed.length) throw new Error(`not updated: ${failed.join("; ")}`);
                        return `updated ${kit.id} on ${done.updated.length} location(s)`;
                      })}
                  >
                    update
                  </button>
                </>
              )}
              {kit.missing.length > 0 && (
                <span class="error">missing: {kit.missing.map((need) => need.tool).join(", ")}</span>
              )}
              <button
                type="button"
                class="small"
                data-action="remove"
                onClick={() =>
                  act(async () => {
                    await api.json(api.own("kits/remove"), {
                      method: "POST",
                      body: { box: kit.box, location: kit.location },
                    });
                    return `removed ${kit.id} from ${kit.box}/${kit.location}`;
                  })}
              >
                remove
              </button>
            </li>
          ))}
        </ul>
      </section>
      <ApplyKit api={api} library={library ?? []} onApplied={(text) => act(() => Promise.resolve(text))} />
    </div>
  );
}

/**
 * Picks a kit and a box location, previews what applying would change, then applies it. A kit with
 * `match.slug` offers the locations cloned from that repository (`GET /v1/kits/{id}`'s `matching`; spec
 * 2.7: it selects, nothing enforces it), and every location once asked.
 */
function ApplyKit(props: { api: Api; library: KitSummary[]; onApplied: (text: string) => void }) {
  const online = Object.values(boxes.value).filter((b) => b.status.online);
  const all = online.flatMap((b) =>
    b.locations.map((location) => ({ box: b.status.name, location: location.name }))
  );
  const [kitId, setKitId] = useState("");
  const [place, setPlace] = useState("");
  const [everywhere, setEverywhere] = useState(false);
  const [preview, setPreview] = useState<KitPreview | null>(null);
  const [outcome, run] = useOutcome();
  const usable = props.library.filter((kit) => !kit.error);
  const kit = usable.find((k) => k.id === (kitId || usable[0]?.id));
  const slug = kit?.match?.slug;
  const [shown] = useJson<{ matching: { box: string; location: string }[] }>(
    props.api,
    slug ? props.api.own(`kits/${encodeURIComponent(kit!.id)}`) : null,
    [all.length],
  );
  const matching = new Set((shown?.matching ?? []).map((m) => `${m.box}/${m.location}`));
  const places = slug && !everywhere ? all.filter((p) => matching.has(`${p.box}/${p.location}`)) : all;
  const target = places.find((p) => `${p.box}/${p.location}` === place) ?? places[0];
  if (!kit || all.length === 0) return null;
  return (
    <section class="card">
      <h2>Apply a kit</h2>
      <form
        class="form apply-kit"
        onSubmit={async (e) => {
          e.preventDefault();
          setPreview(null);
          if (!target) return;
          await run(async () =>
            setPreview(
              await props.api.json<KitPreview>(props.api.own("kits/preview"), {
                method: "POST",
                body: { id: kit.id, ...target },
              }),
            )
          );
        }}
      >
        <label>
          Kit
          <select
            name="kit"
            value={kit.id}
            onChange={(e) => {
              setKitId(e.currentTarget.value);
              setPreview(null);
            }}
          >
            {usable.map((k) => <option key={k.id} value={k.id}>{k.id}</option>)}
          </select>
        </label>
        <label>
          Location
          <select
            name="place"
            value={target ? `${target.box}/${target.location}` : ""}
            onChange={(e) => {
              setPlace(e.currentTarget.value);
              setPreview(null);
            }}
          >
            {places.length === 0 && <option value="">no location is a clone of {slug}</option>}
            {places.map((p) => (
              <option key={`${p.box}/${p.location}`} value={`${p.box}/${p.location}`}>
                {p.box}/{p.location}
              </option>
            ))}
          </select>
        </label>
        {slug && (
          <label class="check">
            <input
              type="checkbox"
              name="every-location"
              checked={everywhere}
              onChange={(e) => setEverywhere(e.currentTarget.checked)}
            />
            every location, not only the clones of {slug}
          </label>
        )}
        <button type="submit" disabled={!target}>Preview</button>
      </form>
      {outcome?.error && <p class="error" role="alert">{outcome.text}</p>}
      {preview && (
        <div class="kit-preview" data-preview-kit={preview.kit.id}>
          <p>
            {preview.kit.id} on {preview.box}/{preview.location}
            {preview.replaces ? `, replacing ${preview.replaces.id} ${preview.replaces.version ?? ""}` : ""}:
            {" "}
            {preview.changed.length
              ? `changes ${preview.changed.join(", ")}`
              : "changes nothing in the config"}
            {preview.files.length ? `; ${preview.files.length} files` : ""}
          </p>
          {preview.warnings.map((warning) => <p class="error warning" key={warning}>{warning}</p>)}
          <details>
            <summary>Effective config after</summary>
            <pre class="log">{JSON.stringify(preview.effective.after, null, 2)}</pre>
          </details>
          <button
            type="button"
            data-action="apply"
            onClick={async () => {
              const applied = await run(async () => {
                await props.api.json(props.api.own(`kits/${encodeURIComponent(preview.kit.id)}/apply`), {
                  method: "POST",
                  body: { box: preview.box, location: preview.location },
                });
              });
              if (applied) {
                setPreview(null);
                props.onApplied(`applied ${preview.kit.id} to ${preview.box}/${preview.location}`);
              }
            }}
          >
            Apply
          </button>
        </div>
      )}
    </section>
  );
}
