/**
 * The one line `dockd serve` and `dock agent` print on stdout once they serve: what they bound, as JSON,
 * so a supervisor (or a test) that started them on port 0 reads the ports the system chose instead of
 * picking free ones beforehand (which raced with anything else binding meanwhile).
 *
 * @module
 */

/** What a ready line names: the process, its pid, and each listener as `HOST:PORT` or a socket path. */
export interface Ready {
  ready: "dockd" | "dock agent";
  pid: number;
  /** Listeners by role (`socket`, `laptops`, `api`, `proxy`): null for one that is not listening. */
  [listener: string]: string | number | null;
}

/** Prints `ready` as one line of JSON on stdout. */
export function printReady(ready: Ready): void {
  console.log(readyLine(ready));
}

/** The text of a ready line (without its newline). */
export function readyLine(ready: Ready): string {
  return JSON.stringify(ready);
}
