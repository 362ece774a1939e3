/**
 * Every box's status as `GET /v1/status` and `GET /v1/sessions` write it, kept as JSON between changes
 * (`boxes.ts` says which box changed): with 200 boxes a status read then costs no copy, stringify or join
 * of 200 statuses, and a health check (one box every 25 ms at 200 boxes, each changing its `latency_ms`)
 * makes only that box's JSON again.
 *
 * @module
 */
import type { BoxStatus } from "../client/wire.ts";

/** A box's status as kept between changes: its name, whether online, its `BoxStatus` as JSON. */
export interface KeptStatus {
  readonly name: string;
  readonly online: boolean;
  /** The box's `BoxStatus` as JSON. */
  readonly json: string;
}

/** Each box's status JSON, the list of them in order and the whole array, each made once per change. */
export class KeptStatuses {
  #byBox = new Map<string, KeptStatus>();
  #parts?: KeptStatus[];
  #text?: string;

  /** Forgets what was kept of box `name`'s status, and of the whole: it changed, or the box went. */
  changed(name: string): void {
    this.#byBox.delete(name);
    this.#parts = undefined;
    this.#text = undefined;
  }

  /** Every box's kept status, in the order of `statuses` (asked only when something changed). */
  parts(statuses: () => readonly BoxStatus[]): readonly KeptStatus[] {
    return this.#parts ??= statuses().map((status) => {
      let part = this.#byBox.get(status.name);
      if (!part) {
        part = { name: status.name, online: status.online, json: JSON.stringify(status) };
        this.#byBox.set(status.name, part);
      }
      return part;
    });
  }

  /** Every box's status as one JSON array, in the order of `statuses`. */
  json(statuses: () => readonly BoxStatus[]): string {
    return this.#text ??= `[${this.parts(statuses).map((part) => part.json).join(",")}]`;
  }
}
