/**
 * The bus's own delivery lag under a paced storm of events: publish → a plain subscriber, in this
 * process, so what the bus's other subscribers (plugins, flows) cost the publishing path shows as lag.
 *
 * @module
 */
import type { EventBus } from "../core/events.ts";
import { summarize, type Summary } from "./stats.ts";

/**
 * Publishes `rate` events of `type` a second for `seconds` (in bursts of 10 per 10 ms) and measures how
 * long each took to reach a plain subscriber; also the rate achieved.
 */
export async function busLag(
  bus: EventBus,
  options: { seconds: number; rate: number; type: string },
): Promise<{ lags: Summary; achieved: number }> {
  const { seconds, rate, type } = options;
  const lags: number[] = [];
  const stop = bus.subscribe((event) => {
    if (event.type === type) lags.push(performance.now() - (event.data!.at as number));
  });
  const total = seconds * rate;
  const started = performance.now();
  try {
    for (let i = 0; i < total; i++) {
      bus.publish({ type, origin: "bench", data: { at: performance.now(), i } });
      if (i % 10 === 9) {
        const due = started + ((i + 1) / rate) * 1000;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  } finally {
    stop();
  }
  return { lags: summarize(lags), achieved: total / ((performance.now() - started) / 1000) };
}
