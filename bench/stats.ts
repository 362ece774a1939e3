/**
 * Small statistics helpers for the benchmark: timing one call, percentiles of a sample and the
 * formatting of milliseconds in the printed table.
 *
 * @module
 */

/** Percentiles and mean of one sample, in milliseconds. */
export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

/**
 * The `p`-th percentile (0–100) of an ascending sample, interpolated linearly between the two
 * nearest ranks (the definition of numpy's default and of most spreadsheets).
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low] + (sorted[high] - sorted[low]) * (rank - low);
}

/** Summarizes a sample (any order). */
export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((total, x) => total + x, 0);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    mean: sum / sorted.length,
    min: sorted[0],
    max: sorted[sorted.length - 1],
  };
}

/** One row of the printed table. */
export interface Row {
  label: string;
  summary: Summary;
  /** The row this one is compared with (ratio of medians); absent for a baseline. */
  baseline?: Summary;
  /** Shown as the baseline of the rows around it. */
  isBaseline?: boolean;
  note?: string;
  /** Unit of the figures: milliseconds unless told; any other unit is printed after each figure. */
  unit?: "ms" | "MiB" | "KB" | "items/s" | "%";
}

/** A sample size `n`, or for a `--quick` smoke run about a fifth of it (at least 3). */
export function scaled(n: number, quick: boolean): number {
  return quick ? Math.max(3, Math.round(n / 5)) : n;
}

/** Runs `fn` once and returns how long it took, in milliseconds. */
export async function time(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/** Milliseconds for the table: three significant-ish digits, `–` for a figure not measured. */
export function ms(value: number | undefined): string {
  if (value === undefined || Number.isNaN(value)) return "–";
  if (value < 1) return value.toFixed(3);
  if (value < 10) return value.toFixed(2);
  return value.toFixed(1);
}

/** A ratio such as `1.24×`. */
export function ratio(value: number): string {
  return `${value.toFixed(2)}×`;
}

/** The rows as one Markdown table. */
export function table(rows: Row[]): string {
  const lines = [
    "| Measurement | N | p50 ms | p90 ms | p99 ms | mean ms | p50 vs baseline | Notes |",
    "|---|--:|--:|--:|--:|--:|--:|---|",
  ];
  for (const row of rows) {
    const s = row.summary;
    const vs = row.baseline ? ratio(s.p50 / row.baseline.p50) : row.isBaseline ? "baseline" : "";
    // Milliseconds bare, as the header says; another unit (memory) is written after each figure.
    const fmt = (value: number) => row.unit && row.unit !== "ms" ? `${ms(value)} ${row.unit}` : ms(value);
    // A 99th percentile of fewer than 100 samples is just the maximum: not shown.
    const p99 = s.n >= 100 ? fmt(s.p99) : "–";
    // One reading has no spread to show.
    const p90 = s.n > 1 ? fmt(s.p90) : "–";
    lines.push(
      `| ${row.label} | ${s.n} | ${fmt(s.p50)} | ${p90} | ${p99} | ${fmt(s.mean)} | ${vs} | ${
        row.note ?? ""
      } |`,
    );
  }
  return lines.join("\n");
}

/** Per process: each thread's CPU last read (ns), and what threads seen before and gone since had used. */
const threadTimes = new Map<number, { gone: number; threads: Map<string, number> }>();

/**
 * CPU time a process has used so far, in ms (`self`: this one): its threads' time on a CPU from
 * `/proc/<pid>/task/<tid>/schedstat`, in nanoseconds (`/proc/<pid>/stat` counts 10 ms ticks). A thread
 * that has ended keeps counting with what it had used when last read, so the figure never goes back
 * when a runtime's idle thread exits between two reads.
 */
export function cpuMs(pid: number | "self"): number {
  const id = pid === "self" ? Deno.pid : pid;
  const known = threadTimes.get(id) ?? { gone: 0, threads: new Map<string, number>() };
  threadTimes.set(id, known);
  const now = new Map<string, number>();
  const root = `/proc/${id}/task`;
  for (const task of Deno.readDirSync(root)) {
    try {
      now.set(task.name, Number(Deno.readTextFileSync(`${root}/${task.name}/schedstat`).split(" ")[0]));
    } catch {
      // the thread ended while this read the folder
    }
  }
  // Gone, or its id taken by a new thread (whose time starts again from 0).
  for (const [tid, ns] of known.threads) if ((now.get(tid) ?? -1) < ns) known.gone += ns;
  known.threads = now;
  let ns = known.gone;
  for (const spent of now.values()) ns += spent;
  return ns / 1e6;
}
