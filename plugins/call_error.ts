/**
 * How a call of a plugin's module ends when it does not answer, as the module host reports it and as
 * the API answers it.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";

/** How a call ended when it did not answer. */
export type CallFailure = "timeout" | "failed" | "crashed";

/** A failed call: its kind of failure and the message (the module's error, the host's end). */
export class CallError extends Error {
  readonly failure: CallFailure;
  constructor(failure: CallFailure, message: string) {
    super(message);
    this.name = "CallError";
    this.failure = failure;
  }
}

/** What a call answered, and whether it had to start its worker (and for how long). */
export interface CallResult {
  value: unknown;
  coldMs?: number;
}

/** A {@linkcode CallError} as the API answers it. */
export function callErrorToDock(error: unknown, what: string): DockError {
  if (error instanceof CallError) {
    if (error.failure === "timeout") {
      return new DockError("plugin_timeout", `${what} did not answer before its deadline`, { status: 504 });
    }
    return new DockError("plugin_failed", `${what} failed: ${error.message}`, { status: 502 });
  }
  if (error instanceof DockError) return error;
  return new DockError("plugin_failed", `${what} failed: ${(error as Error).message}`, { status: 502 });
}
