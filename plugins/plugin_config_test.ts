import { assertEquals, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import type { PluginConfigSchema } from "./manifest.ts";
import { checkConfig, effectiveConfig, parseAssignments, secretReferences } from "./plugin_config.ts";

const SCHEMA: PluginConfigSchema = {
  type: "object",
  properties: {
    url: { type: "string" },
    retries: { type: "integer", default: 3 },
    level: { type: "string", enum: ["low", "high"] },
    loud: { type: "boolean" },
    token: { type: "string", secret: true },
  },
  required: ["url", "retries"],
};

Deno.test("plugin config: values are checked by type, enum, required and secret references", () => {
  assertEquals(checkConfig(SCHEMA, { url: "u", token: "env://T" }), { url: "u", token: "env://T" });
  const refused = (values: unknown, text: string) =>
    assertThrows(() => checkConfig(SCHEMA, values), DockError, text);
  refused({ url: "u", retires: 1 }, "did you mean 'retries'");
  refused({ url: "u", retries: 1.5 }, "must be an integer");
  refused({ url: "u", level: "mid" }, "must be one of low, high");
  refused({ url: "u", token: "plain-value" }, "reference");
  refused({ loud: true }, "missing required setting: url");
  refused({ url: "a\0b" }, "must be a string");
  refused([], "must be an object");
});

Deno.test("plugin config: ctx.config has defaults and no secret; references are kept apart; k=v is typed", () => {
  const stored = { url: "u", token: "env://T", loud: false };
  assertEquals(effectiveConfig(SCHEMA, stored), { url: "u", retries: 3, loud: false });
  assertEquals(secretReferences(SCHEMA, stored), { token: "env://T" });
  assertEquals(parseAssignments(SCHEMA, ["retries=4", "loud=true", "url=a=b"]), {
    retries: 4,
    loud: true,
    url: "a=b",
  });
  assertThrows(() => parseAssignments(SCHEMA, ["loud=yes"]), DockError, "true or false");
  assertThrows(() => parseAssignments(SCHEMA, ["retries="]), DockError, "a number");
});
