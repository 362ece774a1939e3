/**
 * What the board and Needs you say about time and trouble, as pure functions: the order of what needs the
 * person, how long ago something happened, a failure told as a sentence (never `fetch failed … os error
 * 111`), and a worktree's preview address through the laptop's proxy.
 *
 * @module
 */
import type { AgentState, WaitingReason } from "../../client/wire.ts";

/** What the Needs-you order reads of a session. */
export interface NeedItem {
  agent_state: AgentState;
  reason: WaitingReason | null;
  /** When it entered its state (ms since the epoch). */
  since: number;
}

/**
 * The rank of a session in Needs you: a permission prompt blocks the agent outright, a question waits on
 * an answer, an interrupted or idle agent waits on a prompt, a finished one only on a look.
 */
export function needRank(item: Pick<NeedItem, "agent_state" | "reason">): number {
  if (item.agent_state !== "waiting") return 4;
  if (item.reason === "permission") return 0;
  if (item.reason === "question") return 1;
  return 2; // `input`, or a tool that did not say why
}

/** Needs-you order: permission → question → input → finished, then the longest waiting first. */
export function byNeed(a: NeedItem, b: NeedItem): number {
  return needRank(a) - needRank(b) || a.since - b.since;
}

/** How long ago `then` was, as a person says it: `12 s`, `3 min`, `2 h 5 min`, `4 d`. */
export function ago(then: number, now: number): string {
  const seconds = Math.max(0, Math.floor((now - then) / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  return `${Math.floor(hours / 24)} d`;
}

/** What a waiting reason means, for a badge and a notification's body. */
export function reasonText(reason: WaitingReason | null | undefined): string {
  if (reason === "permission") return "asks permission to use a tool";
  if (reason === "question") return "asks you a question";
  if (reason === "input") return "waits for your next prompt";
  return "waits for you";
}

/**
 * A failure as a sentence. Deno's and the browser's network errors (`fetch failed`, `Connection refused
 * (os error 111)`, `error sending request`, `Failed to fetch`) name a socket, not what the person can do;
 * anything else (the API's own messages, already sentences) is kept as it is.
 */
export function plainError(message: string, where = "the box"): string {
  const text = message.toLowerCase();
  if (/os error 111|connection refused|econnrefused/.test(text)) {
    return `${capital(where)} is not answering: nothing listens at its address (is dock running there?).`;
  }
  if (/os error 110|timed out|timeout|etimedout/.test(text)) {
    return `${capital(where)} did not answer in time: the network or the machine may be down.`;
  }
  if (/os error 113|os error 101|no route|unreachable|network is/.test(text)) {
    return `${capital(where)} cannot be reached: its machine or network is down.`;
  }
  if (/os error 104|connection reset|broken pipe|closed before|os error 32/.test(text)) {
    return `${capital(where)} closed the connection; dock retries by itself.`;
  }
  if (/dns|name or service not known|failed to lookup|os error -2|os error -3/.test(text)) {
    return `${capital(where)}'s address does not resolve (check its name in ~/.ssh/config or dock boxes).`;
  }
  if (/fetch failed|failed to fetch|error sending request|networkerror|load failed/.test(text)) {
    return `${capital(where)} cannot be reached right now; dock retries by itself.`;
  }
  return message;
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * A worktree's address through the laptop's private-URL proxy (spec 2.10), named by the laptop's name
 * for the box: the box's own name (`vm` where the laptop says `local`) is unknown to the proxy.
 */
export function previewUrl(
  place: { worktree: string; location: string; box: string; path?: string },
  proxyPort: number,
): string {
  const path = (place.path ?? "").replace(/^\/+/, "");
  return `http://${place.worktree}.${place.location}.${place.box}.localhost:${proxyPort}/${path}`;
}
