// deno-lint-ignore-file no-explicit-any ban-types -- extra-typings' own defaults, repeated for the alias
/**
 * commander for dock's CLI: the runtime is the vendored copy in `cli/vendor/commander/` (no `node:`
 * imports, so a command does not pay for Deno's Node compatibility layer; see `cli/vendor/commander.ts`),
 * the types are `@commander-js/extra-typings`' (a type-only import: nothing of it loads at run time).
 *
 * @module
 */
import type * as Typed from "@commander-js/extra-typings";
import * as vendored from "./vendor/commander/index.js";

/** commander's `Command`, typed by extra-typings. */
export const Command = vendored.Command as unknown as typeof Typed.Command;
/** commander's `Command`, typed by extra-typings. */
export type Command<
  Args extends any[] = [],
  Opts extends Typed.OptionValues = {},
  GlobalOpts extends Typed.OptionValues = {},
> = Typed.Command<Args, Opts, GlobalOpts>;
/** commander's `Option`, typed by extra-typings. */
export const Option = vendored.Option as unknown as typeof Typed.Option;
/** commander's `InvalidArgumentError` (a parser's refusal of a value). */
export const InvalidArgumentError = vendored
  .InvalidArgumentError as unknown as typeof Typed.InvalidArgumentError;
/** The values of a command's options. */
export type OptionValues = Typed.OptionValues;

/** Parses a count option: a positive whole number, else a usage error naming the value. */
export function positiveInteger(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new InvalidArgumentError(`must be a positive whole number, got ${JSON.stringify(value)}`);
  }
  return n;
}
