/**
 * Test assertions (no `@std/assert` here: JSR is out of reach). Thin wrappers over `node:assert`
 * with the Deno std names, so tests read the same as anywhere else.
 *
 * @module
 */
import nodeAssert from "node:assert/strict";

/** Asserts that `value` is truthy. */
export function assert(value: unknown, message?: string): asserts value {
  nodeAssert.ok(value, message);
}

/** Asserts deep equality. */
export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  nodeAssert.deepStrictEqual(actual, expected, message);
}

/** Asserts deep inequality. */
export function assertNotEquals<T>(actual: T, expected: T, message?: string): void {
  nodeAssert.notDeepStrictEqual(actual, expected, message);
}

/** Asserts that `text` contains `part`. */
export function assertStringIncludes(text: string, part: string, message?: string): void {
  if (!text.includes(part)) {
    throw new nodeAssert.AssertionError({
      message: message ??
        `expected ${JSON.stringify(text.slice(0, 2000))} to include ${JSON.stringify(part)}`,
    });
  }
}

/** Asserts that `text` matches `pattern`. */
export function assertMatch(text: string, pattern: RegExp, message?: string): void {
  nodeAssert.match(text, pattern, message);
}

// deno-lint-ignore no-explicit-any
type ErrorClass = new (...args: any[]) => Error;

/** Asserts that `fn` throws an instance of `errorClass` whose message includes `includes`. */
export function assertThrows(fn: () => unknown, errorClass: ErrorClass = Error, includes?: string): Error {
  try {
    fn();
  } catch (error) {
    checkError(error, errorClass, includes);
    return error as Error;
  }
  throw new nodeAssert.AssertionError({ message: "expected the function to throw" });
}

/** Asserts that `fn` rejects with an instance of `errorClass` whose message includes `includes`. */
export async function assertRejects(
  fn: () => Promise<unknown>,
  errorClass: ErrorClass = Error,
  includes?: string,
): Promise<Error> {
  try {
    await fn();
  } catch (error) {
    checkError(error, errorClass, includes);
    return error as Error;
  }
  throw new nodeAssert.AssertionError({ message: "expected the promise to reject" });
}

function checkError(error: unknown, errorClass: ErrorClass, includes?: string): void {
  if (!(error instanceof errorClass)) {
    throw new nodeAssert.AssertionError({
      message: `expected ${errorClass.name}, got ${(error as Error)?.name}: ${(error as Error)?.message}`,
    });
  }
  if (includes !== undefined && !error.message.includes(includes)) {
    throw new nodeAssert.AssertionError({
      message: `expected the error message to include ${JSON.stringify(includes)}, got ${
        JSON.stringify(error.message)
      }`,
    });
  }
}
