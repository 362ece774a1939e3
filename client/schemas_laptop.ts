/**
 * The rules of the laptop agent's own request bodies (spec 4.1): boxes, pairing and adding one, forwards,
 * routes, app documents, the kit library, editors, plugin links, the offline queue and broadcasts. Strict
 * like every schema of `schemas.ts` (which holds the box API's, and the field rules both share); only the
 * agent's routes import it.
 *
 * @module
 */
import { z } from "zod";
import type {
  AddSshRequest,
  BoxAddLocal,
  BroadcastRequest,
  EditorOpen,
  ForwardCreate,
  JsonValue,
  KitAddRequest,
  KitSaveRequest,
  KitTarget,
  PairRequest,
  PluginFnLinkRequest,
  ProxyRoute,
  QueueCreate,
  QueueEdit,
} from "./wire.ts";
import { SESSION_NAME } from "./schemas.ts";

const PORT = z.number().int().min(1).max(65535);

/** The longest prompt the offline queue takes, in UTF-16 units. */
export const QUEUE_TEXT_LIMIT = 1_000_000;

/** A kit's id, as `kit.json` has it. */
const KIT_ID = z.string().regex(
  /^[a-z0-9][a-z0-9-]{0,47}$/,
  "must be a kit id: [a-z0-9][a-z0-9-]*, at most 48",
);
const PATH_TEXT = z.string().min(1).max(4096);

/** Body of `POST /v1/editors/open`. */
export const EDITOR_OPEN = z.strictObject({
  editor: z.string().min(1).max(32),
  box: z.string().min(1).max(64),
  location: z.string().min(1).max(64).optional(),
  worktree: z.string().min(1).max(64).optional(),
  path: z.string().min(1).max(4096).optional(),
  file: z.string().min(1).max(4096).regex(/^[^\n\r]*$/, "must be one line").optional(),
  line: z.number().int().min(1).optional(),
  col: z.number().int().min(1).optional(),
}) satisfies z.ZodType<EditorOpen>;

/**
 * A file or folder on the laptop, absolute: the agent's working folder means nothing to whoever asks (the
 * CLI resolves a relative one against its own).
 */
const LAPTOP_PATH = PATH_TEXT.regex(/^\//, "must be an absolute path");

/** Body of `POST /v1/kits/add`. */
export const KIT_ADD = z.strictObject({
  file: LAPTOP_PATH.optional(),
  folder: LAPTOP_PATH.optional(),
  git: z.string().min(1).max(2048).optional(),
}) satisfies z.ZodType<KitAddRequest>;

/** Body of `POST /v1/kits/{id}/apply` and `POST /v1/kits/remove`. */
export const KIT_TARGET = z.strictObject({
  box: z.string().min(1).max(64),
  location: z.string().min(1).max(64),
}) satisfies z.ZodType<KitTarget>;

/** Body of `POST /v1/kits/preview`. */
export const KIT_PREVIEW = KIT_TARGET.extend({ id: KIT_ID }) satisfies z.ZodType<KitTarget & { id: string }>;

/** Body of `POST /v1/kits/save`. */
export const KIT_SAVE = KIT_TARGET.extend({
  id: KIT_ID,
  name: z.string().max(200).optional(),
  version: z.string().regex(/^\d+(\.\d+)*$/, "must be dotted numbers such as 1.2.0").max(64).optional(),
}) satisfies z.ZodType<KitSaveRequest>;

/** Body of `POST /v1/plugins/{id}/fn-link`. */
export const PLUGIN_FN_LINK = z.strictObject({
  where: z.string().min(1).max(64).optional(),
  path: z.string().max(2048).optional(),
}).optional() satisfies z.ZodType<PluginFnLinkRequest | undefined>;

/** Body of `POST /v1/boxes/add-ssh`. */
export const ADD_SSH_REQUEST = z.strictObject({
  host: z.string().min(1).max(300),
  name: z.string().max(63).optional(),
  identity: z.string().min(1).max(4096).optional(),
  via: z.enum(["tls", "ssh"]).optional(),
  listen: z.string().min(1).max(300).optional(),
}) satisfies z.ZodType<AddSshRequest>;

/** Body of `POST /v1/boxes/pair`: a box's pairing link. */
export const PAIR_REQUEST = z.strictObject({
  link: z.string().max(2000),
  name: z.string().max(63).optional(),
  network: z.string().min(1).max(64).optional(),
}) satisfies z.ZodType<PairRequest>;

/** Body of `POST /v1/boxes/add-local` (none: named `local`). */
export const BOX_ADD_LOCAL = z.strictObject({
  name: z.string().optional(),
}).optional() satisfies z.ZodType<BoxAddLocal | undefined>;

/** Body of `POST /v1/forwards`. */
export const FORWARD_CREATE = z.strictObject({
  box: z.string().min(1),
  local: PORT,
  remote: PORT,
}) satisfies z.ZodType<ForwardCreate>;

/** Body of `POST /v1/routes`. */
export const PROXY_ROUTE = z.strictObject({
  pattern: z.string().min(1),
  box: z.string().min(1),
  port: PORT,
}) satisfies z.ZodType<ProxyRoute>;

/** Body of `PUT /v1/app/{key}`: any JSON document (the app owns its settings). */
export const APP_DOCUMENT = z.custom<JsonValue>(
  (value) => value !== undefined,
  "a JSON document is required",
) satisfies z.ZodType<JsonValue>;

const QUEUE_ID = z.string().regex(
  /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
  "must be letters, digits, '.', '_', ':' and '-', at most 128",
);
const QUEUE_BOX = z.string().min(1).max(63);
const QUEUE_SESSION = z.string().regex(SESSION_NAME, "must be a session name (letters, digits, '_' and '-')");
const QUEUE_TEXT = z.string().max(QUEUE_TEXT_LIMIT, `must be at most ${QUEUE_TEXT_LIMIT} characters`);

/** Body of `POST /v1/queue`. */
export const QUEUE_CREATE = z.strictObject({
  id: QUEUE_ID.optional(),
  box: QUEUE_BOX,
  session: QUEUE_SESSION,
  text: QUEUE_TEXT,
  wait: z.boolean().optional(),
  enter: z.boolean().optional(),
}) satisfies z.ZodType<QueueCreate>;

/** Most sessions one broadcast reaches. */
export const BROADCAST_TARGETS_LIMIT = 200;

/** Body of `POST /v1/broadcast`. */
export const BROADCAST = z.strictObject({
  id: QUEUE_ID.optional(),
  text: QUEUE_TEXT,
  to: z.array(
    z.string().regex(
      // deno-lint-ignore no-control-regex
      /^[^/\x00-\x20\x7f]{1,63}\/[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/,
      "must be BOX/SESSION (a session name: letters, digits, '_' and '-')",
    ),
  ).min(1).max(BROADCAST_TARGETS_LIMIT).optional(),
  where: z.strictObject({
    state: z.enum(["idle", "running", "waiting", "finished"]).optional(),
    box: QUEUE_BOX.optional(),
    location: z.string().min(1).max(200).optional(),
    agent: z.string().min(1).max(64).optional(),
  }).optional(),
  enter: z.boolean().optional(),
  queue: z.boolean().optional(),
  dry_run: z.boolean().optional(),
}) satisfies z.ZodType<BroadcastRequest>;

/** Body of `PATCH /v1/queue/{id}`. */
export const QUEUE_EDIT = z.strictObject({
  box: QUEUE_BOX.optional(),
  session: QUEUE_SESSION.optional(),
  text: QUEUE_TEXT.optional(),
}) satisfies z.ZodType<QueueEdit>;
