/**
 * Drawing only what is near the screen (issue 36, the app ready with 2,000 sessions): a part of the page
 * far below the fold is a placeholder of about its height until it comes within a screen of the viewport,
 * then drawn, and kept drawn (a board scrolled through once costs what it did before, spread over the
 * scroll). One IntersectionObserver watches every placeholder: 200 boxes' worth cost one observer, not 200.
 *
 * @module
 */
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";

/** Called when a watched placeholder comes near the screen, by placeholder. */
const waiting = new Map<Element, () => void>();
let observer: IntersectionObserver | null = null;

/** The one observer, made on first use (a page with a short board never makes it). */
function watcher(): IntersectionObserver {
  observer ??= new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const show = waiting.get(entry.target);
      waiting.delete(entry.target);
      observer!.unobserve(entry.target);
      show?.();
    }
    // A screen's height above and below: drawn before it scrolls into view, not when it is there.
  }, { rootMargin: "100% 0px" });
  return observer;
}

/**
 * Its children at once when `eager` (what the first screen shows: drawn in the first frame, with no
 * observer's turn to wait for), else once near the screen; until then an empty block `height` px high,
 * so the scroll bar and what follows stay about where they will be. `children` is a function: what is not
 * drawn is not built either.
 */
export function Later(props: { eager: boolean; height: number; children: () => ComponentChildren }) {
  const [near, setNear] = useState(props.eager);
  // Once drawn, kept: a search that narrows the board above it must not take it down again.
  const once = useRef(props.eager);
  if (props.eager) once.current = true;
  const spot = useRef<HTMLDivElement>(null);
  const drawn = near || once.current;
  useEffect(() => {
    const element = spot.current;
    if (drawn || !element) return;
    waiting.set(element, () => setNear(true));
    watcher().observe(element);
    return () => {
      waiting.delete(element);
      observer?.unobserve(element);
    };
  }, [drawn]);
  if (drawn) return <>{props.children()}</>;
  return <div class="later" ref={spot} style={{ height: `${props.height}px` }} aria-busy="true" />;
}
