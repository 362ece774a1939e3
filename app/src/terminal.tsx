/**
 * A session's terminal (spec 4.3): xterm.js on the attach WebSocket. Output arrives as binary frames,
 * keystrokes leave as binary frames, a resize as a JSON text frame. A closed socket is opened again
 * (the box redraws the screen on attach); the session keeps running meanwhile.
 *
 * It behaves like a local terminal (issue 32):
 * - **Scrollback from tmux.** Before the first attach the session's history (`GET sessions/{name}/screen
 *   ?history=N`, less the visible screen, which the attach redraws) is written into xterm and pushed above
 *   the screen. tmux draws on the alternate screen, where xterm keeps no scrollback and turns the wheel
 *   into arrow keys: the switches to it (`CSI ? 1049/1047/47 h|l`) are taken out of the stream, so tmux
 *   draws on the normal screen and the lines it scrolls off join that history.
 * - **The wheel scrolls the history**, handled here before xterm sees it: never a key sent to the program.
 * - **Search** in it (Ctrl+Shift+F, or the field in the header; Enter for the next match, Shift+Enter the
 *   previous), **copy on select**, and **Ctrl+Shift+K leaves the terminal** (the keyboard focus goes back
 *   to the page's navigation), as the header says.
 * - Open terminals stay attached while other views show (a pool of `TERMINAL_POOL` in `views.ts`).
 * - **A key's echo is drawn as it arrives**, not on the next animation frame; bulk output keeps xterm's
 *   one draw per frame (`term_draw.ts`).
 *
 * @module
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import { WebLinksAddon } from "@xterm/addon-web-links";
import { SearchAddon } from "@xterm/addon-search";
import type { Api } from "./api.ts";
import { PromptBox } from "./prompt.tsx";
import { ALT_SCREEN, altScreenFilter, historyAbove } from "./term_stream.ts";
import { after, now } from "./clock.ts";
import { drawPending, DrawPolicy, warmWidths } from "./term_draw.ts";

/** Lines kept above the screen. */
const SCROLLBACK = 50_000;
/** Lines of the session's tmux history written in before the first attach (tmux keeps 50,000). */
const HISTORY = 10_000;
/** The key that leaves the terminal, as shown in its header. */
export const LEAVE_KEY = "Ctrl+Shift+K";

/** Where a terminal is in its connection. */
export type Link = "connecting" | "open" | "closed";

/** One attached terminal with its prompt box. */
export function TerminalPane(
  props: { api: Api; box: string; session: string; onClose?: () => void; onHandOff?: () => void },
) {
  const host = useRef<HTMLDivElement>(null);
  const [link, setLink] = useState<Link>("connecting");
  const [attempt, setAttempt] = useState(0);
  const [size, setSize] = useState("");
  const [query, setQuery] = useState("");
  const searchRef = useRef<SearchAddon | null>(null);
  const findRef = useRef<HTMLInputElement>(null);

  useEffect(() => {
    const term = new Terminal({
      scrollback: SCROLLBACK,
      cursorBlink: true,
      fontSize: 13,
      fontFamily: "ui-monospace, Menlo, Consolas, monospace",
      theme: terminalTheme(),
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.loadAddon(new WebLinksAddon());
    const search = new SearchAddon();
    term.loadAddon(search);
    searchRef.current = search;
    term.open(host.current!);
    const copy = () => {
      if (term.hasSelection()) navigator.clipboard?.writeText(term.getSelection()).catch(() => {});
    };
    // Ctrl+C belongs to the program in the terminal; Ctrl+Shift+C copies the selection (Ctrl+V and
    // Ctrl+Shift+V paste through the browser's own paste event). Ctrl+Shift+F searches, Ctrl+Shift+K
    // leaves: neither reaches the program, nor the page's own Ctrl+K.
    term.attachCustomKeyEventHandler((event) => {
      if (event.type !== "keydown" || !event.ctrlKey || !event.shiftKey) return true;
      if (event.code === "KeyC") copy();
      else if (event.code === "KeyF") findRef.current?.focus();
      else if (event.code === "KeyK") leave(host.current!);
      else return true;
      event.preventDefault();
      event.stopPropagation();
      return false;
    });
    const selected = term.onSelectionChange(copy);
    // The wheel scrolls the history here, before xterm's own listener could turn it into arrow keys.
    const wheel = (event: WheelEvent) => {
      event.preventDefault();
      event.stopPropagation();
      const lines = event.deltaMode === 1 ? event.deltaY : event.deltaY / 16;
      term.scrollLines(Math.sign(lines) * Math.max(1, Math.round(Math.abs(lines))));
    };
    host.current!.addEventListener("wheel", wheel, { capture: true, passive: false });
    fit.fit();
    setSize(`${term.cols}x${term.rows}`);
    // The glyph widths measured before the first key, and again once the fonts are in (a new font clears
    // them): a letter's first echo then draws without a forced layout.
    warmWidths(term);
    document.fonts?.ready.then(() => warmWidths(term), () => {});
    const encoder = new TextEncoder();
    const filter = altScreenFilter();
    const draws = new DrawPolicy();
    let socket: WebSocket | null = null;
    let stopped = false;
    let retry = 250;
    let cancelRetry = () => {};
    const connect = () => {
      setLink("connecting");
      socket = new WebSocket(
        props.api.attachUrl(props.box, props.session, { cols: term.cols, rows: term.rows }),
      );
      socket.binaryType = "arraybuffer";
      socket.onopen = () => {
        retry = 250;
        // Attaching again redraws the screen: start from a clean one, keeping the scrollback.
        term.write("\x1b[H\x1b[2J");
        setLink("open");
        setAttempt((n) => n + 1);
      };
      socket.onmessage = (message) => {
        const data = typeof message.data === "string"
          ? message.data.replace(ALT_SCREEN, "")
          : filter(new Uint8Array(message.data as ArrayBuffer));
        // A small write into a quiet stream (a key's echo) is drawn once parsed, not on the next frame.
        if (draws.drawsNow(data.length, now())) term.write(data, () => drawPending(term));
        else term.write(data);
      };
      socket.onclose = () => {
        setLink("closed");
        if (stopped) return;
        cancelRetry = after(retry, connect);
        retry = Math.min(retry * 2, 4000);
      };
    };
    const input = term.onData((data) => {
      if (socket?.readyState === WebSocket.OPEN) socket.send(encoder.encode(data));
    });
    const resized = term.onResize(({ cols, rows }) => {
      setSize(`${cols}x${rows}`);
      if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "resize", cols, rows }));
    });
    // A hidden terminal (another view shows) has no size: it keeps its own until shown again.
    const observer = new ResizeObserver(() => host.current?.offsetParent && fit.fit());
    observer.observe(host.current!);
    // The session's history from tmux first, then the live stream (a failure leaves just the stream).
    const screen = (history: number) =>
      props.api.json<{ screen: string }>(
        props.api.box(props.box, `sessions/${encodeURIComponent(props.session)}/screen?history=${history}`),
      ).then((s) => s.screen);
    Promise.all([screen(HISTORY), screen(0)]).then(([full, visible]) => {
      const above = historyAbove(full, visible).replace(/\n$/, "");
      if (!stopped && above) {
        // Written, then pushed up by a screen of new lines: all of it above the screen, which the attach
        // redraws.
        term.write(above.replaceAll("\n", "\r\n") + "\r\n".repeat(term.rows));
      }
    }, () => {}).finally(() => !stopped && connect());
    return () => {
      stopped = true;
      cancelRetry();
      observer.disconnect();
      host.current?.removeEventListener("wheel", wheel, { capture: true });
      selected.dispose();
      input.dispose();
      resized.dispose();
      socket?.close();
      term.dispose();
    };
  }, [props.box, props.session]);

  return (
    <section class="pane" data-session={`${props.box}/${props.session}`} data-size={size}>
      <header class="pane-head">
        <span class="pane-title">{props.box}/{props.session}</span>
        <span class={`link link-${link}`} data-link={link} data-attached={attempt}>{link}</span>
        <form
          class="term-search"
          onSubmit={(e) => e.preventDefault()}
        >
          <input
            ref={findRef}
            type="search"
            placeholder="search (Ctrl+Shift+F)"
            aria-label="Search the terminal's history"
            value={query}
            onInput={(e) => {
              const text = (e.target as HTMLInputElement).value;
              setQuery(text);
              if (text) searchRef.current?.findNext(text, { incremental: true });
            }}
            onKeyDown={(e) => {
              if (e.key === "Enter" && query) {
                e.preventDefault();
                if (e.shiftKey) searchRef.current?.findPrevious(query);
                else searchRef.current?.findNext(query);
              } else if (e.key === "Escape") {
                searchRef.current?.clearDecorations();
                host.current?.querySelector("textarea")?.focus();
              }
            }}
          />
        </form>
        <span class="term-keys" title="Leave the terminal: the keyboard goes back to the page">
          {LEAVE_KEY} leaves
        </span>
        {props.onHandOff && (
          <button
            type="button"
            class="small"
            name="hand-off"
            title="A new task that continues this one's work"
            onClick={props.onHandOff}
          >
            Hand off
          </button>
        )}
        {props.onClose && (
          <button type="button" class="icon" title="Close terminal" onClick={props.onClose}>×</button>
        )}
      </header>
      <div class="term" ref={host} />
      <PromptBox api={props.api} box={props.box} session={props.session} />
    </section>
  );
}

/** Gives the keyboard back to the page: the navigation's current view, else the page. */
function leave(host: HTMLElement): void {
  host.querySelector("textarea")?.blur();
  const target = document.querySelector<HTMLElement>("nav .active") ?? document.body;
  target.focus();
}

function terminalTheme(): { background: string; foreground: string; cursor: string } {
  const style = getComputedStyle(document.documentElement);
  const read = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
  return {
    background: read("--term-bg", "#101317"),
    foreground: read("--term-fg", "#d8dee9"),
    cursor: read("--accent", "#7aa2f7"),
  };
}
