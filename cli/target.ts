/**
 * Where a command acts. The families that work on a box's things (location, worktree, service,
 * session, task, loop, exec) are written once against a {@linkcode Scope}: `dockd` names things of
 * its own box (`app/wt`) and talks to the daemon's socket; `dock` puts the box first
 * (`devbox/app/wt`) and talks to that box through the agent's relay (spec 4.4).
 *
 * @module
 */
import type { Command, OptionValues } from "./commander.ts";
import type { AgentClient } from "../client/agent.ts";
import type { BoxClient } from "../client/box.ts";
import { DockError } from "../client/errors.ts";
import { localBox } from "./client.ts";
import { guarded } from "./output.ts";

/** A box to talk to and the names that followed it in the command's argument. */
export interface Target {
  client: BoxClient;
  /** The names after the box, one per part of the form (absent optional parts left out). */
  rest: string[];
  /** The box's name on the laptop; absent on a box, where there is only one. */
  box?: string;
}

/** Which program runs the commands, and how it reaches a box. */
export interface Scope {
  readonly kind: "box" | "laptop";
  /** The program's name, for messages. */
  readonly program: "dockd" | "dock";
  /**
   * Splits `spec` by the form (`LOCATION/WORKTREE`, `LOCATION[/WORKTREE]`, `SESSION`), with `BOX/`
   * in front on the laptop; a spec that does not fit is a usage error naming the expected form.
   */
  resolve(spec: string, form: string): Promise<Target>;
  /**
   * The boxes a listing covers. On a box: this box, with `spec` (optional, shaped `[form]`) split
   * into `rest`. On the laptop: the box `spec` names (`BOX[/form]`), or every online box without it.
   */
  each(spec: string | undefined, form?: string): Promise<Target[]>;
  /** A required argument as help shows it: `<location/worktree>`, or `<box/location/worktree>` on the laptop. */
  arg(name: string): `<${string}>`;
  /** An optional argument as help shows it: `[location]`, or `[box[/location]]` on the laptop. */
  optionalArg(name: string): `[${string}]`;
  /** Runs a command's action: a DockError prints `<program>: message` and exits 1 (2 for usage). */
  run(action: () => Promise<void>): Promise<void>;
  /** The laptop agent's client (the offline queue lives there); absent on a box. */
  agent?: () => Promise<AgentClient>;
}

/** `dockd`: this box, through the daemon's socket. */
export function boxScope(): Scope {
  let client: BoxClient | undefined;
  const local = () => client ??= localBox();
  return {
    kind: "box",
    program: "dockd",
    resolve(spec, form) {
      const { required, optional } = parseForm(form);
      const rest = splitParts(spec, required.length, optional.length);
      if (!rest) throw usage(display(required, optional), spec);
      return Promise.resolve({ client: local(), rest });
    },
    async each(spec, form = "") {
      if (spec === undefined) return [{ client: local(), rest: [] }];
      return [await this.resolve(spec, `[${form}]`)];
    },
    arg: (name) => `<${name}>`,
    optionalArg: (name) => `[${name}]`,
    run: (action) => guarded(action, "dockd"),
  };
}

/** `dock`: any paired box, through the agent's relay; `agent` returns the agent's client (starting it). */
export function laptopScope(agent: () => Promise<AgentClient>): Scope {
  let connected: Promise<AgentClient> | undefined;
  const connect = () => connected ??= agent();
  return {
    kind: "laptop",
    program: "dock",
    async resolve(spec, form) {
      const { required, optional } = parseForm(form);
      const [box, ...names] = spec.split("/");
      const rest = box ? splitParts(names.join("/"), required.length, optional.length) : undefined;
      if (!rest) throw usage(display(["BOX", ...required], optional), spec);
      return { client: (await connect()).box(box), rest, box };
    },
    async each(spec, form = "") {
      if (spec !== undefined) return [await this.resolve(spec, `[${form}]`)];
      const client = await connect();
      const targets: Target[] = [];
      for (const box of (await client.status()).boxes) {
        if (box.online) targets.push({ client: client.box(box.name), rest: [], box: box.name });
        else console.error(`dock: ${box.name} is offline${box.error ? ` (${box.error})` : ""}; skipped`);
      }
      return targets;
    },
    arg: (name) => `<box/${name}>`,
    optionalArg: (name) => `[box[/${name}]]`,
    run: (action) => guarded(action, "dock"),
    agent: connect,
  };
}

/** Lists across targets, the lists joined; on the laptop each item carries its `box` first. */
export async function gather<T extends object>(
  targets: Target[],
  list: (target: Target) => Promise<T[]>,
): Promise<(T & { box?: string })[]> {
  const lists = await Promise.all(
    targets.map(async (target) => {
      const items = await list(target);
      return target.box === undefined ? items : items.map((item) => ({ box: target.box, ...item }));
    }),
  );
  return lists.flat();
}

/** A name as the user types it in this program: `app/wt` on a box, `devbox/app/wt` on the laptop. */
export function named(where: { box?: string }, name: string): string {
  return where.box === undefined ? name : `${where.box}/${name}`;
}

/**
 * Adds `[box]` on the laptop to a command that takes no argument on a box (a listing), and runs
 * `action` with the boxes it covers.
 */
export function listing<O extends OptionValues>(
  scope: Scope,
  command: Command<[], O>,
  action: (targets: Target[], options: O) => Promise<void>,
): void {
  if (scope.kind === "laptop") {
    command.argument("[box]", "only this box (default: every online box)").action((box, o) =>
      scope.run(async () => action(await scope.each(box), o))
    );
  } else command.action((o) => scope.run(async () => action(await scope.each(undefined), o)));
}

function parseForm(form: string): { required: string[]; optional: string[] } {
  const open = form.indexOf("[");
  const head = open < 0 ? form : form.slice(0, open);
  const tail = open < 0 ? "" : form.slice(open);
  const words = (text: string) => text.replace(/[[\]]/g, "").split("/").filter(Boolean);
  return { required: words(head), optional: words(tail) };
}

/** `A/B/C` into its names when there are between `required` and `required + optional` of them. */
function splitParts(spec: string, required: number, optional: number): string[] | undefined {
  if (spec === "" && required === 0) return [];
  const parts = spec.split("/");
  if (parts.length < required || parts.length > required + optional || parts.some((p) => !p)) return;
  return parts;
}

/** `LOCATION[/WORKTREE]`, `BOX/SESSION`, `[LOCATION]`. */
function display(required: string[], optional: string[]): string {
  let text = required.join("/");
  for (const name of optional) text += text ? `[/${name}]` : `[${name}]`;
  return text;
}

function usage(form: string, spec: string): DockError {
  return new DockError("usage", `expected ${form}, got "${spec}"`, { status: 400 });
}
