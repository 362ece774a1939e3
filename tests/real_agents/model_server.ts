/**
 * Scripted model servers on loopback for the real agent tools (issue 30): one `Deno.serve` that speaks
 * the three wire formats the tools use, chosen by path:
 *
 * - Anthropic streaming Messages API (`POST /v1/messages`, SSE), Claude Code;
 * - OpenAI Responses API (`POST /v1/responses`, SSE), Codex;
 * - Gemini (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`, `:generateContent`,
 *   `:countTokens`), Gemini CLI.
 *
 * The script rides in the prompt itself, so each scenario says what the model does without talking to
 * the server: `[[slow:MS]]` answers after MS milliseconds (a turn that takes its time; the answer is
 * cut short when the tool hangs up, as on Esc), `[[bash:COMMAND]]` asks for the tool's shell tool,
 * `[[tool:NAME]]` asks for the tool named NAME with no arguments (an MCP tool), `[[mark:X]]` names the
 * prompt (two prompts run together by a lost Enter carry the second's mark only). Anything else is
 * answered at once with a line of text. A turn whose last message is a tool's result is answered with
 * `done: <first words of the result>`, so the transcript on screen proves the result came back.
 *
 * @module
 */

/** What the model asks for, read from the last prompt of a request. */
export interface Script {
  /** Milliseconds before the answer starts. */
  slowMs: number;
  /** A shell command the model asks to run. */
  bash?: string;
  /** A tool (by name) the model asks to call, without arguments. */
  tool?: string;
  /** `[[mark:X]]`: names the prompt, so a test can tell which prompts reached the model. */
  mark?: string;
  /** Every mark, in order: two prompts run together (one typed onto another) carry two. */
  marks: string[];
  /** The first 60 characters of the prompt's line with a directive: a stray key typed before it shows. */
  head: string;
}

/** One request the server answered, for assertions (no prompt text kept beyond the script). */
export interface Seen {
  api: "anthropic" | "openai" | "gemini";
  path: string;
  /** The tools the request offered (none on a side call such as a title). */
  tools: string[];
  /** Whether it was answering a tool's result, and the first characters of that result. */
  toolResult?: string;
  script: Script;
}

/** A running scripted model server. */
export interface ModelServer {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  port: number;
  /** Every request answered, oldest first. */
  seen: Seen[];
  [Symbol.asyncDispose](): Promise<void>;
}

const DIRECTIVE = /\[\[(slow|bash|tool|mark):([^\]]*)\]\]/g;

/** The script of a prompt's text. */
export function readScript(text: string): Script {
  // The line of the first directive (the text blocks are joined by lines): reminders the tool adds
  // in blocks of their own before it are not part of it.
  const first = text.search(/\[\[(slow|bash|tool|mark):/);
  const head = first < 0 ? "" : text.slice(text.lastIndexOf("\n", first) + 1).split("\n")[0].slice(0, 60);
  const script: Script = { slowMs: 0, marks: [], head };
  for (const [, kind, value] of text.matchAll(DIRECTIVE)) {
    if (kind === "slow") script.slowMs = Number(value) || 0;
    if (kind === "bash") script.bash = value;
    if (kind === "tool") script.tool = value;
    if (kind === "mark") script.mark = value;
    if (kind === "mark") script.marks.push(value);
  }
  return script;
}

/** Starts the server on a free loopback port. */
export function startModelServer(): ModelServer {
  const seen: Seen[] = [];
  let ids = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const url = new URL(request.url);
      const body = request.method === "POST" ? await request.json().catch(() => ({})) : {};
      {
        if (url.pathname.endsWith("/messages/count_tokens")) return Response.json({ input_tokens: 12 });
        if (url.pathname.endsWith("/messages")) return anthropic(body, request.signal, seen, () => ++ids);
        if (url.pathname.endsWith("/responses")) return openai(body, request.signal, seen, () => ++ids);
        if (url.pathname.includes(":countTokens")) return Response.json({ totalTokens: 12 });
        if (url.pathname.includes(":streamGenerateContent") || url.pathname.includes(":generateContent")) {
          return gemini(body, url, request.signal, seen);
        }
        if (url.pathname.endsWith("/models")) return Response.json({ data: [], models: [] });
        return Response.json({ error: { message: `no such route ${url.pathname}` } }, { status: 404 });
      }
    },
  );
  const port = server.addr.port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Every string found under `value` (text blocks, parts, contents), joined. */
function textsOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(textsOf).join("\n");
  if (isRecord(value)) {
    return ["text", "content", "parts", "input_text"].map((key) => textsOf(value[key])).join("\n");
  }
  return "";
}

/** Waits `ms`, or less when the client hangs up (Esc in the tool aborts its request). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/** An SSE response whose events are produced after `delayMs` (headers go at once, as a real API does). */
function sse(
  events: () => [string | null, unknown][],
  delayMs: number,
  signal: AbortSignal,
  options: { comment?: boolean } = {},
): Response {
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      // A comment line first: the tool sees the stream open, then waits for the model to "think".
      // (Gemini's client reads every line as JSON: no comment for it.)
      if (options.comment !== false) controller.enqueue(encoder.encode(": open\n\n"));
      await pause(delayMs, signal);
      if (signal.aborted) {
        controller.close();
        return;
      }
      for (const [event, data] of events()) {
        const head = event ? `event: ${event}\n` : "";
        controller.enqueue(encoder.encode(`${head}data: ${JSON.stringify(data)}\n\n`));
      }
      controller.close();
    },
  });
  return new Response(stream, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
  });
}

// ---- Anthropic Messages ----

function anthropic(body: Json, signal: AbortSignal, seen: Seen[], id: () => number): Response {
  const messages = Array.isArray(body.messages) ? body.messages.filter(isRecord) : [];
  const tools = Array.isArray(body.tools) ? body.tools.filter(isRecord).map((t) => String(t.name)) : [];
  const last = messages.findLast((m) => m.role === "user");
  const blocks = Array.isArray(last?.content) ? last.content.filter(isRecord) : [];
  const result = blocks.find((b) => b.type === "tool_result");
  // A prompt typed after a denial rides in the same message as the refused tool's result: its script
  // still counts (its mark, its time), though the model answers the result.
  const prompt = typeof last?.content === "string"
    ? last.content
    : blocks.filter((b) => b.type !== "tool_result");
  const script = readScript(textsOf(prompt));
  const toolResult = result ? textsOf(result.content).trim().slice(0, 4000) : undefined;
  seen.push({ api: "anthropic", path: "/v1/messages", tools, toolResult, script });
  const n = id();
  // A new prompt that rides with a refused tool's result is still a prompt: it asks for its tool.
  const wantsTool = tools.length > 0 && (script.bash !== undefined || script.tool !== undefined);
  const content: Json[] = wantsTool
    ? [{
      type: "tool_use",
      id: `toolu_${n}`,
      name: script.bash !== undefined ? "Bash" : script.tool,
      input: script.bash !== undefined ? { command: script.bash, description: "Run the command" } : {},
    }]
    : [{ type: "text", text: result ? `done: ${firstWords(toolResult!)}` : `answer ${n}` }];
  const stop = wantsTool ? "tool_use" : "end_turn";
  const message = {
    id: `msg_${n}`,
    type: "message",
    role: "assistant",
    model: String(body.model ?? "claude"),
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
  };
  if (body.stream !== true) return Response.json({ ...message, content, stop_reason: stop });
  return sse(
    () => {
      const events: [string, unknown][] = [
        ["message_start", { type: "message_start", message: { ...message, content: [], stop_reason: null } }],
      ];
      content.forEach((block, index) => {
        const start = block.type === "tool_use" ? { ...block, input: {} } : { type: "text", text: "" };
        events.push(["content_block_start", { type: "content_block_start", index, content_block: start }]);
        const delta = block.type === "tool_use"
          ? { type: "input_json_delta", partial_json: JSON.stringify(block.input) }
          : { type: "text_delta", text: block.text };
        events.push(["content_block_delta", { type: "content_block_delta", index, delta }]);
        events.push(["content_block_stop", { type: "content_block_stop", index }]);
      });
      events.push(["message_delta", {
        type: "message_delta",
        delta: { stop_reason: stop, stop_sequence: null },
        usage: { output_tokens: 5 },
      }]);
      events.push(["message_stop", { type: "message_stop" }]);
      return events;
    },
    script.slowMs,
    signal,
  );
}

// ---- OpenAI Responses (Codex) ----

function openai(body: Json, signal: AbortSignal, seen: Seen[], id: () => number): Response {
  const input = Array.isArray(body.input) ? body.input.filter(isRecord) : [];
  const tools = Array.isArray(body.tools)
    ? body.tools.filter(isRecord).map((t) => String(t.name ?? t.type))
    : [];
  const lastUser = input.findLastIndex((item) => item.role === "user");
  const lastOutput = input.findLastIndex((item) => String(item.type).endsWith("_call_output"));
  const result = lastOutput > lastUser ? input[lastOutput] : undefined;
  const script = result ? { slowMs: 0, marks: [], head: "" } : readScript(textsOf(input[lastUser]?.content));
  const toolResult = result ? textsOf(result.output ?? result.content).trim().slice(0, 4000) : undefined;
  seen.push({ api: "openai", path: "/v1/responses", tools, toolResult, script });
  const n = id();
  let item: Json;
  if (!result && script.bash !== undefined && tools.length) {
    // Codex offers its shell as `shell` (argv) or `exec_command` (a command line), by model family.
    // Asking to leave the sandbox is what makes Codex (approval "on-request") ask the person first.
    const escalate = { sandbox_permissions: "require_escalated", justification: "run the command" };
    const args = tools.includes("exec_command")
      ? { cmd: script.bash, ...escalate }
      : { command: ["bash", "-lc", script.bash], ...escalate };
    item = {
      type: "function_call",
      id: `fc_${n}`,
      call_id: `call_${n}`,
      name: tools.includes("exec_command") ? "exec_command" : "shell",
      arguments: JSON.stringify(args),
    };
  } else {
    const text = result ? `done: ${firstWords(toolResult!)}` : `answer ${n}`;
    item = {
      type: "message",
      id: `msg_${n}`,
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text, annotations: [] }],
    };
  }
  const response = { id: `resp_${n}`, object: "response", model: String(body.model ?? "gpt") };
  return sse(
    () => {
      const events: [string, unknown][] = [
        ["response.created", { type: "response.created", response: { ...response, status: "in_progress" } }],
        ["response.output_item.added", { type: "response.output_item.added", output_index: 0, item }],
      ];
      if (item.type === "message") {
        const text = ((item.content as Json[])[0].text) as string;
        events.push(["response.output_text.delta", {
          type: "response.output_text.delta",
          item_id: item.id,
          output_index: 0,
          content_index: 0,
          delta: text,
        }]);
      }
      events.push(["response.output_item.done", {
        type: "response.output_item.done",
        output_index: 0,
        item,
      }]);
      events.push(["response.completed", {
        type: "response.completed",
        response: {
          ...response,
          status: "completed",
          output: [item],
          usage: {
            input_tokens: 10,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: 5,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: 15,
          },
        },
      }]);
      return events;
    },
    script.slowMs,
    signal,
  );
}

// ---- Gemini ----

function gemini(body: Json, url: URL, signal: AbortSignal, seen: Seen[]): Response {
  const contents = Array.isArray(body.contents) ? body.contents.filter(isRecord) : [];
  const declared = Array.isArray(body.tools) ? body.tools.filter(isRecord) : [];
  const tools = declared.flatMap((t) =>
    Array.isArray(t.functionDeclarations)
      ? t.functionDeclarations.filter(isRecord).map((f) => String(f.name))
      : []
  );
  const last = contents.at(-1);
  const parts = Array.isArray(last?.parts) ? last.parts.filter(isRecord) : [];
  const response = parts.find((p) => isRecord(p.functionResponse));
  const script = response ? { slowMs: 0, marks: [], head: "" } : readScript(textsOf(parts));
  const toolResult = response
    ? JSON.stringify((response.functionResponse as Json).response).slice(0, 4000)
    : undefined;
  seen.push({ api: "gemini", path: url.pathname, tools, toolResult, script });
  const wantsTool = tools.length > 0 && !response && script.bash !== undefined;
  const part = wantsTool
    ? { functionCall: { name: "run_shell_command", args: { command: script.bash, description: "run it" } } }
    : { text: response ? `done: ${firstWords(toolResult!)}` : "answer" };
  const chunk = {
    candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: "gemini-test",
  };
  if (!url.pathname.includes(":streamGenerateContent")) {
    // Side calls (the next-speaker check, JSON asks) want JSON text: a neutral one.
    const json = isRecord(body.generationConfig) &&
      body.generationConfig.responseMimeType === "application/json";
    const text = json ? JSON.stringify({ reasoning: "done", next_speaker: "user" }) : "answer";
    return Response.json({
      ...chunk,
      candidates: [{ ...chunk.candidates[0], content: { role: "model", parts: [{ text }] } }],
    });
  }
  return sse(() => [[null, chunk]], script.slowMs, signal, { comment: false });
}

function firstWords(text: string): string {
  return text.replace(/\s+/g, " ").slice(0, 60);
}
