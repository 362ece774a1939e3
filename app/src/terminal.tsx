/**
 * A session's terminal (spec 4.3): xterm.js on the attach WebSocket. Output arrives as binary frames,
 * keystrokes leave as binary frames, a resize as a JSON text frame. A closed socket is opened again
 * (the box redraws the screen on attach); the session keeps running meanwhile.
 *
 * @module
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import { WebLinksAddon } from "@xterm/addon-web-links";
import type { Api } from "./api.ts";
import { PromptBox } from "./prompt.tsx";

/** Lines kept above the screen. */
const SCROLLBACK = 50_000;

/** Where a terminal is in its connection. */
export type Link = "connecting" | "open" | "closed";

/** One attached terminal with its prompt box. */
export function TerminalPane(
  props: { api: Api; box: string; session: string; onClose?: () => void },
) {
  const host = useRef<HTMLDivElement>(null);
  const [link, setLink] = useState<Link>("connecting");
  const [attempt, setAttempt] = useState(0);
  const [size, setSize] = useState("");

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
    term.open(host.current!);
    // Ctrl+C belongs to the program in the terminal; Ctrl+Shift+C copies the selection (Ctrl+V and
    // Ctrl+Shift+V paste through the browser's own paste event).
    term.attachCustomKeyEventHandler((event) => {
      if (event.type === "keydown" && event.ctrlKey && event.shiftKey && event.code === "KeyC") {
        if (term.hasSelection()) navigator.clipboard?.writeText(term.getSelection()).catch(() => {});
        return false;
      }
      return true;
    });
    fit.fit();
    setSize(`${term.cols}x${term.rows}`);
    const encoder = new TextEncoder();
    let socket: WebSocket | null = null;
    let stopped = false;
    let retry = 250;
    let timer: ReturnType<typeof setTimeout> | undefined;
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
        term.write(
          typeof message.data === "string" ? message.data : new Uint8Array(message.data as ArrayBuffer),
        );
      };
      socket.onclose = () => {
        setLink("closed");
        if (stopped) return;
        timer = setTimeout(connect, retry);
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
    const observer = new ResizeObserver(() => fit.fit());
    observer.observe(host.current!);
    connect();
    return () => {
      stopped = true;
      clearTimeout(timer);
      observer.disconnect();
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
        {props.onClose && (
          <button type="button" class="icon" title="Close terminal" onClick={props.onClose}>×</button>
        )}
      </header>
      <div class="term" ref={host} />
      <PromptBox api={props.api} box={props.box} session={props.session} />
    </section>
  );
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
