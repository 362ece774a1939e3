/**
 * Lifecycles as tables: each lifecycle (a service's state, a flow run's status, a queue item's state, …)
 * is written once as `state → event → next state`, and every change goes through
 * {@linkcode transition}, so a change the table does not name is refused in one place (and said why)
 * instead of being assigned wherever convenient. Pure: it reads nothing and changes nothing.
 *
 * @module
 */

/** A lifecycle: for each state, the events it accepts and the state each leads to. */
export type TransitionTable<S extends string, E extends string> = Readonly<
  Record<S, Readonly<Partial<Record<E, S>>>>
>;

/** Options of {@linkcode transition}. */
export interface TransitionOptions {
  /** Names the lifecycle in the refusal (`service app/w/web`). */
  name?: string;
  /** Told of a refused change. @default {nothing: the caller decides} */
  log?: (message: string) => void;
}

/** The state `event` leads to from `from`, or null (said to `log`) when the table does not allow it. */
export function transition<S extends string, E extends string>(
  table: TransitionTable<S, E>,
  from: S,
  event: E,
  options: TransitionOptions = {},
): S | null {
  const next = Object.hasOwn(table, from) ? table[from][event] : undefined;
  if (next !== undefined && Object.hasOwn(table[from], event)) return next;
  options.log?.(`${options.name ?? "lifecycle"}: '${event}' refused in state '${from}'`);
  return null;
}

/** Every allowed change of a table, as `[from, event, to]` (for conformance tests and documentation). */
export function transitions<S extends string, E extends string>(
  table: TransitionTable<S, E>,
): [S, E, S][] {
  return (Object.entries(table) as [S, Partial<Record<E, S>>][]).flatMap(([from, events]) =>
    (Object.entries(events) as [E, S][]).map(([event, to]): [S, E, S] => [from, event, to])
  );
}

/** The events a table names in any state. */
export function events<S extends string, E extends string>(table: TransitionTable<S, E>): E[] {
  return [...new Set(transitions(table).map(([, event]) => event))];
}
