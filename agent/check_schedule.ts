/**
 * When the agent checks a box's health again: after a check that answered, and after one that failed
 * (a backoff). Both carry jitter, so boxes (and laptops) never check in lockstep.
 *
 * @module
 */

/**
 * When to check a box again after a check that answered: `healthMs` from now, give or take a fifth.
 * Without the jitter every box checked together stays together: all of them start at once when the
 * agent starts (each is due at 0), so with 200 boxes the loop started 200 checks in one tick every
 * 5 s, for as long as the agent ran, and a request that came in then waited behind them all. Each round
 * now drifts them further apart.
 */
export function afterCheck(now: number, healthMs: number, random: () => number = Math.random): number {
  return now + healthMs * (0.8 + random() * 0.4);
}

/**
 * When to check a box again after a failed check: backing off with jitter (1 s doubling to 30 s) so
 * many laptops (or many boxes) do not retry in lockstep. Only a check that was due counts toward the
 * backoff: checks asked for in between (the queue asks after every send that did not reach the box,
 * one per session) are answered but do not lengthen it. Counting them once put a box restarted in a
 * second 16–30 s away from being seen again (the queue soak, bench/queue_soak.ts).
 */
export function afterFailedCheck(
  state: { failures: number; nextCheck: number },
  now: number,
  random: () => number = Math.random,
): { failures: number; nextCheck: number } {
  if (state.failures > 0 && now < state.nextCheck) return state;
  const failures = state.failures + 1;
  const backoff = Math.min(1000 * 2 ** (failures - 1), 30_000);
  return { failures, nextCheck: now + backoff * (0.75 + random() * 0.5) };
}
