/**
 * The views' way to read a JSON answer: loaded once per change of what it depends on (an event count,
 * a reload), never on a timer.
 *
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import type { Api } from "./api.ts";

/** Loads `path` once per change of `deps`; `null` until it answers. The third item loads it again. */
export function useJson<T>(
  api: Api,
  path: string | null,
  deps: unknown[] = [],
): [T | null, string | null, () => void] {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [round, setRound] = useState(0);
  useEffect(() => {
    if (!path) return;
    // A read overtaken by a newer one (another path picked, or a change seen meanwhile) is dropped:
    // answers can come back out of order, and the older one must not overwrite the newer.
    let current = true;
    api.json<T>(path).then((v) => {
      if (!current) return;
      setValue(v);
      setError(null);
    }, (e: Error) => {
      if (current) setError(e.message);
    });
    return () => {
      current = false;
    };
  }, [path, round, ...deps]);
  return [value, error, () => setRound((n) => n + 1)];
}
