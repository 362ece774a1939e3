/**
 * Routes of sessions and tasks: create, list, end, screen, send, keys, answer, wait, attach (WebSocket), and
 * `POST tasks` (a worktree with an agent already running in it: `daemon/tasks.ts`).
 *
 * @module
 */
import { parseDuration } from "../../client/duration.ts";
import { DockError } from "../../client/errors.ts";
import type { AgentState } from "../../client/wire.ts";
import {
  SESSION_ANSWER,
  SESSION_CREATE,
  SESSION_KEYS,
  SESSION_SEND,
  TASK_REQUEST,
} from "../../client/schemas.ts";
import { attachSession, attachSize } from "../attach.ts";
import type { TlsEnv } from "./pair.ts";
import type { EventBus } from "../../core/events.ts";
import type { SendLedger } from "../send_ledger.ts";
import type { Sessions } from "../sessions.ts";
import { ledgerKey } from "../session_input.ts";
import type { Tasks } from "../tasks.ts";
import type { Tmux } from "../tmux.ts";
import type { Worktrees } from "../worktrees.ts";
import { body, intQuery, json, param, requestOrigin, RouteTable } from "../../core/http.ts";

const STATES: AgentState[] = ["idle", "running", "waiting", "finished"];

/** What the session and task routes use of the box. */
export interface SessionRoutesBackend {
  bus: Pick<EventBus, "publish">;
  worktrees: Pick<Worktrees, "target">;
  sessions: Pick<
    Sessions,
    | "list"
    | "get"
    | "program"
    | "create"
    | "remove"
    | "screen"
    | "send"
    | "keys"
    | "answer"
    | "wait"
    | "typed"
    | "interrupted"
    | "explain"
    | "looked"
  >;
  sendLedger: Pick<SendLedger, "known">;
  tasks: Pick<Tasks, "check" | "create">;
  tmux: Pick<Tmux, "socket">;
}

/** The session and task routes. */
export function sessionRoutes(box: SessionRoutesBackend): RouteTable {
  return new RouteTable("sessions")
    .add("GET", "/sessions", () => json(box.sessions.list()))
    .route({
      method: "POST",
      path: "/sessions",
      input: async (c) => {
        const request = await body(c, SESSION_CREATE);
        // 400, 404 and 422 before the gates run, and the gates see what would really run.
        const worktree = box.worktrees.target(request.location);
        const program = await box.sessions.program(worktree.location, request);
        return { request, worktree, program };
      },
      gates: [{
        action: "session.create",
        describe: ({ request, worktree, program }) => ({
          target: {
            session: request.name ?? null,
            location: worktree.location,
            worktree: worktree.name,
            agent: program.agent,
            command: program.command,
            prompt: request.prompt,
          },
          location: worktree.location,
          worktree: worktree.name,
        }),
      }, {
        // A first prompt is a prompt typed into a session: the session.send gates see it too.
        action: "session.send",
        describe: ({ request, worktree }) =>
          request.prompt === undefined ? null : {
            target: { session: request.name ?? null, text: request.prompt, enter: true, first: true },
            location: worktree.location,
            worktree: worktree.name,
          },
      }],
      handler: async (c, { request }) => {
        const session = await box.sessions.create(request, requestOrigin(c));
        if (request.open) {
          box.bus.publish({
            type: "session.open",
            origin: requestOrigin(c),
            data: { session: session.name },
          });
        }
        return json(session, 201);
      },
    })
    .add("GET", "/sessions/:name", (c) => json(box.sessions.explain(param(c, "name"))))
    .add(
      "DELETE",
      "/sessions/:name",
      async (c) => json(await box.sessions.remove(param(c, "name"), requestOrigin(c))),
    )
    .add("GET", "/sessions/:name/screen", async (c) => {
      const history = intQuery(c, "history", { min: 0, max: 50_000, fallback: 0 });
      return json({ screen: await box.sessions.screen(param(c, "name"), history) });
    })
    .route({
      method: "POST",
      path: "/sessions/:name/send",
      input: (c) => body(c, SESSION_SEND),
      gates: [{
        action: "session.send",
        // A repeat of a key already sent only replays its outcome: it is not a new send to gate (a gate
        // that refuses now must not turn a prompt that was typed into a failure).
        describe: (request, c) =>
          request.key !== undefined && box.sendLedger.known(request.key) ? null : {
            target: { session: param(c, "name"), text: request.text, enter: request.enter ?? true },
          },
      }],
      handler: async (c, request) =>
        json(
          await box.sessions.send(param(c, "name"), request.text, request.enter ?? true, requestOrigin(c), {
            key: request.key,
            unlessWaiting: request.unless_waiting,
          }),
        ),
    })
    .route({
      method: "POST",
      path: "/sessions/:name/keys",
      input: (c) => body(c, SESSION_KEYS),
      gates: [{
        // Keys are input to the session as a prompt is: the same gate, told they are keys (on stdin only,
        // like a prompt's text). A repeat of a key already typed only replays its outcome.
        action: "session.send",
        describe: (request, c) =>
          request.key !== undefined && box.sendLedger.known(ledgerKey("keys", request.key)) ? null : {
            target: { session: param(c, "name"), keys: request.keys },
          },
      }],
      handler: async (c, request) =>
        json(await box.sessions.keys(param(c, "name"), request.keys, requestOrigin(c), { key: request.key })),
    })
    .route({
      method: "POST",
      path: "/sessions/:name/answer",
      input: (c) => {
        box.sessions.get(param(c, "name")); // 404 before the gates run
        return body(c, SESSION_ANSWER);
      },
      gates: [{
        // An answer is keys typed into the session: the gate sees the answer (the keys depend on what the
        // prompt shows, and are chosen in the step that types).
        action: "session.send",
        describe: (request, c) =>
          request.key !== undefined && box.sendLedger.known(ledgerKey("answer", request.key)) ? null : {
            target: { session: param(c, "name"), answer: request.answer },
          },
      }],
      handler: async (c, request) =>
        json(
          await box.sessions.answer(param(c, "name"), request.answer, requestOrigin(c), { key: request.key }),
        ),
    })
    .add("GET", "/sessions/:name/wait", async (c) => {
      const name = param(c, "name");
      box.sessions.get(name);
      const states = (c.req.query("for") || "finished,waiting").split(",").map((s) => s.trim()).filter(
        Boolean,
      );
      for (const state of states) {
        if (!STATES.includes(state as AgentState)) {
          throw new DockError("invalid_request", `for: '${state}' is not a state (${STATES.join(", ")})`, {
            status: 400,
            detail: { field: "for" },
          });
        }
      }
      const timeoutMs = parseDuration(c.req.query("timeout") || "10m", "timeout");
      if (timeoutMs < 1000 || timeoutMs > 3_600_000) {
        throw new DockError("invalid_request", "timeout: must be from 1s to 1h", {
          status: 400,
          detail: { field: "timeout" },
        });
      }
      const afterText = c.req.query("after");
      let after: Date | undefined;
      if (afterText) {
        after = new Date(afterText);
        if (Number.isNaN(after.getTime()) || !/^\d{4}-\d{2}-\d{2}T/.test(afterText)) {
          throw new DockError(
            "invalid_request",
            `after: must be an RFC 3339 time, got ${JSON.stringify(afterText)}`,
            {
              status: 400,
              detail: { field: "after" },
            },
          );
        }
      }
      return json(
        await box.sessions.wait(name, {
          states: states as AgentState[],
          after,
          timeoutMs,
          signal: c.req.raw.signal,
        }),
      );
    })
    .add("GET", "/sessions/:name/attach", (c) => {
      const session = box.sessions.get(param(c, "name"));
      const { cols, rows } = attachSize(new URL(c.req.url));
      // A laptop's attach over TLS holds the laptop's tie: its revocation closes the socket.
      const tie = (c.env as TlsEnv | undefined)?.tie;
      box.sessions.looked(session.name);
      return attachSession(c.req.raw, {
        socket: box.tmux.socket,
        session: session.name,
        cols,
        rows,
        signal: tie?.signal,
        onEnd: () => {
          // What the agent did while the person watched counts as seen too.
          box.sessions.looked(session.name);
          tie?.release();
        },
        onSubmit: () => box.sessions.typed(session.name),
        onInterrupt: () => box.sessions.interrupted(session.name),
      });
    })
    .route({
      method: "POST",
      path: "/tasks",
      input: async (c) => {
        const request = await body(c, TASK_REQUEST);
        box.tasks.check(request); // 400, 404 and 422 before the gates run
        return { request, program: await box.sessions.program(request.location, request) };
      },
      gates: [{
        action: "worktree.create",
        describe: ({ request }) => ({
          target: { name: request.name, branch: request.branch, base: request.base },
          location: request.location,
        }),
      }, {
        // The task's session runs in the worktree the task makes: it is named, not there yet.
        action: "session.create",
        describe: ({ request, program }) => ({
          target: {
            session: null,
            location: request.location,
            worktree: request.name,
            agent: program.agent,
            command: program.command,
            prompt: request.prompt,
          },
          location: request.location,
        }),
      }, {
        // The first prompt is typed into the task's session: the session.send gates see it too.
        action: "session.send",
        describe: ({ request }) =>
          request.prompt === undefined ? null : {
            target: { session: null, text: request.prompt, enter: true, first: true },
            location: request.location,
          },
      }],
      handler: async (c, { request }) => json(await box.tasks.create(request, requestOrigin(c)), 201),
    });
}
