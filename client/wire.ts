/**
 * Wire types: the records the box API and the laptop agent exchange (spec section 2). The daemon, the
 * agent, the CLI and `mod.ts` all import these, so a field is named once. The request bodies' rules
 * are zod schemas tied to these types in `schemas.ts`; the `wire_*.ts` modules this one gathers import
 * nothing else and hold only types and constant lists, so whoever imports it (every `dock` command;
 * `dock hook` on each agent turn, by `import type`) loads nothing more.
 *
 * One module per concern, each under the 600-line rule; this one keeps the single name importers use.
 * `cli/write_plugin_reference.ts` joins them, in this order, into the plugin SDK's `sdk/wire.ts`.
 *
 * @module
 */
export * from "./wire_events.ts";
export * from "./wire_locations.ts";
export * from "./wire_plugins.ts";
export * from "./wire_box.ts";
export * from "./wire_review.ts";
export * from "./wire_sessions.ts";
export * from "./wire_laptop.ts";
export * from "./wire_pairing.ts";
