/**
 * The flow run lifecycle's conformance (flow_run_status.ts): each allowed change is what the real engine
 * (`flows.ts`, over tests/flows_engine.ts) records, and every other change is refused and said.
 */
import { assertEquals, assertThrows } from "../tests/assert.ts";
import { engine, flow } from "../tests/flows_engine.ts";
import { transition, transitions } from "../core/transition.ts";
import { FLOW_RUN_LIFECYCLE, type FlowRunEvent, type FlowRunPhase, runStatus } from "./flow_run_status.ts";
import { MemoryLog } from "../core/log.ts";

Deno.test("flow run lifecycle: begin→succeed, begin→fail, skip and interrupt are each what the engine records", async () => {
  await using e = await engine({
    repo: [
      flow("ok"),
      flow("bad", { steps: [{ kind: "run", command: "true" }] }), // this engine's exec always fails
      flow("capped", { max_runs_per_hour: 1 }),
    ],
  });
  const byId = new Map((await e.flows.effective()).map((f) => [f.flow.id, f]));
  const fire = (id: string) =>
    e.flows.startTriggered({ flow: byId.get(id)!, event: { type: "x" }, place: { location: "app" } });
  assertEquals((await fire("ok")).status, "succeeded");
  assertEquals((await fire("bad")).status, "failed");
  assertEquals((await fire("capped")).status, "succeeded");
  assertEquals((await fire("capped")).status, "skipped");
  // What a daemon killed with -9 during a run leaves: `running`; the next start interrupts it.
  e.store.run(
    "INSERT INTO flow_runs (flow, scope, trigger, status, start) VALUES ('ok', 'repo:app', 'x', 'running', ?)",
    new Date().toISOString(),
  );
  e.flows.start();
  const statuses = e.flows.runs({ limit: 10 }).map((run) => run.status).sort();
  assertEquals(statuses, ["failed", "interrupted", "skipped", "succeeded", "succeeded"]);
  // Each status reached is the end of exactly one change of the table: all of them were taken.
  const ends = transitions(FLOW_RUN_LIFECYCLE).map(([, , to]) => to).sort();
  assertEquals(ends, ["failed", "interrupted", "running", "skipped", "succeeded"]);
});

Deno.test("flow run lifecycle: every change the table does not name is refused and said", () => {
  const phases = Object.keys(FLOW_RUN_LIFECYCLE) as FlowRunPhase[];
  const events: FlowRunEvent[] = ["begin", "skip", "succeed", "fail", "interrupt"];
  for (const from of phases) {
    for (const event of events) {
      const said: string[] = [];
      const to = transition(FLOW_RUN_LIFECYCLE, from, event, { log: (m) => said.push(m) });
      const allowed = transitions(FLOW_RUN_LIFECYCLE).some(([a, e]) => a === from && e === event);
      assertEquals([to !== null, said.length], [allowed, allowed ? 0 : 1], `${from} ${event}`);
      if (!allowed) {
        const log = new MemoryLog();
        assertThrows(() => runStatus(from, event, log), Error, "is not a change");
        assertEquals(log.records.map((r) => r.message), [`flow run: '${event}' refused in state '${from}'`]);
      }
    }
  }
});
