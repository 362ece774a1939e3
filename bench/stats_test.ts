import { assert } from "../tests/assert.ts";
import { until } from "../tests/wait.ts";
import { cpuMs } from "./stats.ts";

Deno.test("cpuMs: a thread's time counts while it runs and still once it has ended", async () => {
  const before = cpuMs("self");
  // A worker is a thread of this process: it spins until told, then the thread ends with terminate().
  const source =
    `self.onmessage = () => { const end = Date.now() + 40; while (Date.now() < end); postMessage("done"); };`;
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  const worker = new Worker(url, { type: "module" });
  const done = new Promise((resolve) => worker.onmessage = resolve);
  worker.postMessage("spin");
  await done;
  const during = cpuMs("self");
  assert(during > before, `the worker's spin counted (${before} → ${during} ms)`);
  worker.terminate();
  URL.revokeObjectURL(url);
  // The worker's thread leaves /proc/self/task once it has ended.
  const threads = () => [...Deno.readDirSync("/proc/self/task")].length;
  const withWorker = threads();
  await until(() => threads() < withWorker, { what: "the worker's thread ended" });
  const after = cpuMs("self");
  assert(after >= during, `never back when a thread ends (${during} → ${after} ms)`);
});
