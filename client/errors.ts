/**
 * The one error class dock throws across process boundaries. A DockError carries a stable `code`
 * (machine-readable, the `error.code` of an API answer) and the HTTP status it maps to, so the API
 * layer and the CLI never guess how to present it.
 *
 * @module
 */

/** HTTP statuses dock answers errors with. */
export type ErrorStatus =
  | 400
  | 401
  | 403
  | 404
  | 405
  | 406
  | 408
  | 409
  | 413
  | 415
  | 422
  | 429
  | 500
  | 502
  | 503
  | 504;

/** Options for {@linkcode DockError}. */
export interface DockErrorOptions {
  /** HTTP status the error maps to. @default {400} */
  status?: ErrorStatus;
  /** The underlying error. */
  cause?: unknown;
  /** Extra machine-readable detail returned beside code and message (never secrets). */
  detail?: Record<string, unknown>;
}

// The same for every copy of this module (see DockError's `Symbol.hasInstance`).
const BRAND = Symbol.for("dock.error-class");

/** A user-facing error: it names what went wrong in words a person can act on. */
export class DockError extends Error {
  /**
   * A package runs its command line bundled and loads the servers from sources (`cli/lazy.ts`): an error
   * the daemon's code throws is then a DockError of another copy of this class. `instanceof DockError`
   * answers true for those too, by the brand the class itself carries (subclasses check as usual).
   */
  static readonly [BRAND] = "DockError";

  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    if (!Object.hasOwn(this, BRAND) || typeof value !== "object" || value === null) return false;
    for (let proto = Object.getPrototypeOf(value); proto; proto = Object.getPrototypeOf(proto)) {
      const constructor = (proto as { constructor?: unknown }).constructor as
        | Record<symbol, unknown>
        | undefined;
      if (constructor && Object.hasOwn(constructor, BRAND) && constructor[BRAND] === "DockError") return true;
    }
    return false;
  }

  override name = "DockError";
  readonly code: string;
  readonly status: ErrorStatus;
  readonly detail?: Record<string, unknown>;

  constructor(code: string, message: string, options: DockErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.status = options.status ?? 400;
    this.detail = options.detail;
  }

  /** The JSON body every API error is answered with. */
  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...this.detail } };
  }
}

/** The shape of every error answer: `{"error":{"code","message"}}`. */
export interface ErrorBody {
  error: { code: string; message: string; [extra: string]: unknown };
}

/** The messages of an error and its causes, joined ("fetch failed" alone says nothing). */
export function causeChain(error: unknown): string {
  const messages: string[] = [];
  for (let e = error as Error | undefined; e && messages.length < 5; e = e.cause as Error | undefined) {
    messages.push(e.message ?? String(e));
  }
  return messages.join(": ");
}

/** Options for {@linkcode TransportError}. */
export interface TransportErrorOptions {
  /** True when the request provably never reached the server (see {@linkcode TransportError.neverSent}). */
  neverSent: boolean;
  /** The transport's own error. */
  cause?: unknown;
  /** @default {"unreachable"} */
  code?: string;
  /** @default {503} */
  status?: ErrorStatus;
  detail?: Record<string, unknown>;
}

/**
 * A request that got no HTTP answer: the connection failed. What a caller may do next depends on one
 * fact, carried as a flag so nobody reads it from the message: whether the request could have reached
 * the server (and been acted on) before the failure.
 */
export class TransportError extends DockError {
  override name = "TransportError";
  /**
   * True when the request provably never reached the server: nothing listens, no such socket, the name
   * does not resolve, the TLS handshake failed; all before a byte of the request was written. Safe to
   * send again or queue. False when it may have gone out (the connection broke while sending or
   * waiting for the answer): the server may have acted.
   */
  readonly neverSent: boolean;

  constructor(message: string, options: TransportErrorOptions) {
    super(options.code ?? "unreachable", message, {
      status: options.status ?? 503,
      cause: options.cause,
      detail: options.detail,
    });
    this.neverSent = options.neverSent;
  }
}

/** Shorthand for a 404 naming what was not found. */
export function notFound(what: string, name: string): DockError {
  return new DockError("not_found", `${what} '${name}' not found`, { status: 404 });
}

/** Shorthand for a 400 about one field of a request. */
export function badField(field: string, message: string): DockError {
  return new DockError("invalid_request", `${field}: ${message}`, { status: 400, detail: { field } });
}
