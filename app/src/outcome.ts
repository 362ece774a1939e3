/**
 * How a view runs what a person asked for (a button, a form) and shows how it went: the line the action
 * answered, or its error's message, in place of the last one.
 *
 * @module
 */
import { useState } from "preact/hooks";

/** What the last action said. */
export interface Outcome {
  text: string;
  error: boolean;
}

/**
 * The last action's outcome, and the function that runs one: `call` answers a line to show (nothing:
 * the outcome clears) or throws; `after` runs either way (a reload). Resolves true when `call` succeeded.
 */
export function useOutcome(): [
  Outcome | null,
  (call: () => Promise<string | void>, after?: () => void) => Promise<boolean>,
] {
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const run = async (call: () => Promise<string | void>, after?: () => void) => {
    let ok = true;
    try {
      const text = await call();
      setOutcome(text ? { text, error: false } : null);
    } catch (e) {
      setOutcome({ text: (e as Error).message, error: true });
      ok = false;
    }
    after?.();
    return ok;
  };
  return [outcome, run];
}
