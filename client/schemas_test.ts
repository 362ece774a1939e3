import { z } from "zod";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { assert, assertEquals } from "../tests/assert.ts";
import * as schemas from "./schemas.ts";
import * as laptopSchemas from "./schemas_laptop.ts";
import type { AgentReport } from "./wire.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Every object schema reachable from `schema`, with where it was found. */
function objects(schema: z.ZodType, at: string, out: [string, z.ZodObject][] = []): [string, z.ZodObject][] {
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable) {
    objects(schema.unwrap() as z.ZodType, at, out);
  } else if (schema instanceof z.ZodObject) {
    out.push([at, schema]);
    for (const [key, field] of Object.entries(schema.shape as Record<string, z.ZodType>)) {
      objects(field, `${at}.${key}`, out);
    }
  } else if (schema instanceof z.ZodArray) objects(schema.element as z.ZodType, `${at}[]`, out);
  else if (schema instanceof z.ZodRecord) objects(schema.valueType as z.ZodType, `${at}{}`, out);
  else if (schema instanceof z.ZodUnion) {
    (schema.options as z.ZodType[]).forEach((option, index) => objects(option, `${at}|${index}`, out));
  }
  return out;
}

Deno.test("every object of every request body schema refuses unknown fields", () => {
  const bodies: [string, z.ZodType][] = [["skillsRequest", schemas.skillsRequest(["dock"])]];
  for (const [name, value] of [...Object.entries(schemas), ...Object.entries(laptopSchemas)]) {
    if (value instanceof z.ZodType) bodies.push([name, value]);
  }
  assert(bodies.length >= 25, `only ${bodies.length} schemas found`);
  assert(bodies.some(([name]) => name === "QUEUE_CREATE"), "the laptop's bodies are read too");
  const found = bodies.flatMap(([name, schema]) => objects(schema, name));
  assert(found.length >= bodies.length - 2, "the walk found the objects"); // APP_DOCUMENT has none
  const loose = found.filter(([, object]) => !(object._zod.def.catchall instanceof z.ZodNever));
  assertEquals(loose.map(([at]) => at), []);
});

Deno.test("a box's POST events tells agent reports from other events", () => {
  const report: AgentReport = {
    type: "agent.finished",
    origin: "claude",
    data: { path: "/w", agent: "claude", session_id: null },
    session: "main",
    time: "2026-11-22T10:00:00.000Z",
  };
  const parsed = schemas.BOX_EVENT.parse(report);
  assert(schemas.isAgentReport(parsed));
  assertEquals(parsed, report);
  const plain = schemas.BOX_EVENT.parse({ type: "build.done", data: { n: 1 } });
  assert(!schemas.isAgentReport(plain));
  // A report's type with a plain event's shape is neither.
  assert(!schemas.BOX_EVENT.safeParse({ type: "agent.finished", data: { path: "/w" } }).success);
  assert(
    !schemas.AGENT_REPORT.safeParse({ ...report, data: { ...report.data, prompt: "x" } }).success,
  );
});

/** The modules `entry` loads when it runs (type-only imports are erased), by `deno info`. */
async function runtimeClosure(entry: string): Promise<string[]> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", join(ROOT, entry)],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert(output.success, new TextDecoder().decode(output.stderr));
  const graph = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    roots: string[];
    modules: { specifier: string; dependencies?: { code?: { specifier: string } }[] }[];
  };
  const byName = new Map(graph.modules.map((module) => [module.specifier, module]));
  const seen = new Set<string>();
  const visit = (specifier: string) => {
    if (seen.has(specifier)) return;
    seen.add(specifier);
    for (const dependency of byName.get(specifier)?.dependencies ?? []) {
      if (dependency.code) visit(dependency.code.specifier);
    }
  };
  graph.roots.forEach(visit);
  return [...seen];
}

Deno.test("wire.ts, mod.ts and dock hook load neither zod nor the schemas", async () => {
  for (const entry of ["client/wire.ts", "mod.ts", "cli/hook.ts"]) {
    const loaded = await runtimeClosure(entry);
    const heavy = loaded.filter((specifier) => /zod|client\/schemas(_laptop)?\.ts$/.test(specifier));
    assertEquals(heavy, [], `${entry} loads ${heavy.join(", ")}`);
  }
  // wire.ts loads its own parts and nothing else; the parts import nothing at run time.
  const wire = await runtimeClosure("client/wire.ts");
  assertEquals(wire.filter((specifier) => !/\/client\/wire(_[a-z]+)?\.ts$/.test(specifier)), []);
  assert(wire.length > 1 && wire.includes(`file://${join(ROOT, "client/wire_events.ts")}`));
  for (const part of wire.filter((specifier) => specifier.includes("/client/wire_"))) {
    const path = part.slice(`file://${ROOT}/`.length);
    assertEquals(await runtimeClosure(path), [part], `${path} loads only itself`);
  }
});

Deno.test("AGENT_REPORT: a report's time must be an RFC 3339 time", () => {
  const report = {
    type: "agent.finished",
    origin: "claude",
    data: { path: "/w", agent: "claude", session_id: null },
  };
  assertEquals(schemas.AGENT_REPORT.safeParse({ ...report, time: "2026-01-02T03:04:05.123Z" }).success, true);
  assertEquals(
    schemas.AGENT_REPORT.safeParse({ ...report, time: "2026-01-02T03:04:05+02:00" }).success,
    true,
  );
  for (const time of ["garbage-time", "2026-01-02", "9999-99-99T99:99:99Z x"]) {
    assertEquals(schemas.AGENT_REPORT.safeParse({ ...report, time }).success, false, time);
  }
});

Deno.test("SESSION_KEYS: one character or a key name each, 1 to 64, no control characters", () => {
  const ok = (keys: string[]) => schemas.SESSION_KEYS.safeParse({ keys }).success;
  assert(ok(["1"]) && ok(["y", "Enter"]) && ok(["é", "😀", ";", " ", "C-c", "BSpace"]));
  assert(ok(Array(64).fill("x")) && !ok(Array(65).fill("x")) && !ok([]));
  // Control only through named keys: NUL, ESC, CR, DEL, a C1 character; half a surrogate pair.
  for (const bad of ["\0", "\x1b", "\r", "\x7f", "\x9b", "\ud800", "ab", "", "F1", "enter", "C-z"]) {
    assert(!ok([bad]), JSON.stringify(bad));
  }
  assert(!schemas.SESSION_KEYS.safeParse({ keys: ["1"], text: "x" }).success);
  assert(schemas.SESSION_ANSWER.safeParse({ answer: "always", key: "k-1" }).success);
  assert(!schemas.SESSION_ANSWER.safeParse({ answer: "maybe" }).success);
});
