import { assert, assertEquals } from "../../tests/assert.ts";
import { agentTables } from "../../tests/route_tables.ts";
import { localToolRoutes } from "./local_tools.ts";

const STATUS = {
  BackendState: "Running",
  Self: { HostName: "laptop" },
  CurrentTailnet: { Name: "example.ts.net" },
  Peer: {
    a: { HostName: "box1", DNSName: "box1.example.ts.net.", TailscaleIPs: ["127.0.0.1"], Online: true },
  },
};

/**
 * The laptop's tools over a temporary home and PATH: a fake `tailscale` (status as JSON, login prints a
 * URL) and a fake `code`; one local box, `here`, and one box added over SSH, `far`. No `iptables`.
 */
async function toolsApp() {
  const home = await Deno.makeTempDir({ prefix: "dock-local-tools-" });
  const bin = `${home}/bin`;
  await Deno.mkdir(bin);
  const script = async (name: string, text: string) => {
    await Deno.writeTextFile(`${bin}/${name}`, `#!/bin/sh\n${text}\n`);
    await Deno.chmod(`${bin}/${name}`, 0o755);
  };
  await script(
    "tailscale",
    `if [ "$1" = login ]; then echo "To authenticate, visit:"; echo "  https://login.example/a1"; exit 0; fi\ncat <<'JSON'\n${
      JSON.stringify(STATUS)
    }\nJSON`,
  );
  await script("code", "exit 0");
  const boxes = [
    { name: "here", kind: "socket", address: "/run/dockd.sock", created: "" },
    { name: "far", kind: "tls", address: "https://10.0.0.7:1379", created: "" },
  ];
  const tables = agentTables([localToolRoutes({
    boxes: {
      list: () => boxes as never,
      has: (name: string) => boxes.some((b) => b.name === name),
      sshDestinations: () => new Map([["far", "me@10.0.0.7"]]),
      client: () => ({}) as never,
    } as never,
    home,
    path: () => bin,
    // Nothing listens on these (discovery answers false for both, quickly).
    ports: { dockd: 1, ssh: 1 },
    proxyPort: () => 1377,
  })]);
  return { tables, home, close: () => Deno.remove(home, { recursive: true }) };
}

/** The lines of an NDJSON answer. */
function lines(text: string): Record<string, unknown>[] {
  return text.trim().split("\n").map((line) => JSON.parse(line));
}

Deno.test("local tools routes: networks, peers, login, discover, editors, open, ssh config, port 80", async () => {
  const world = await toolsApp();
  try {
    const { tables } = world;
    assertEquals((await tables.call("GET", "/networks")).body.networks[0].tailnet, "example.ts.net");
    assertEquals((await tables.call("GET", "/networks/tailscale/peers")).body[0].dns, "box1.example.ts.net");
    const login = lines((await tables.call("POST", "/networks/tailscale/login")).text);
    assert(login.some((l) => String(l.line).includes("https://login.example/a1")), JSON.stringify(login));
    assertEquals(login.at(-1), { done: true });
    const found = (await tables.call("GET", "/discover")).body;
    assertEquals([found[0].name, found[0].dockd, found[0].box], ["box1", false, null]);
    assertEquals((await tables.call("GET", "/editors")).body.map((e: { id: string }) => e.id), ["vscode"]);
    const opened = await tables.call("POST", "/editors/open", {
      json: { editor: "vscode", box: "here", path: "/srv/app", file: "a.ts", line: 3 },
    });
    assertEquals(opened.body, {
      editor: "vscode",
      command: [`${world.home}/bin/code`, "/srv/app", "--goto", "/srv/app/a.ts:3"],
    });
    assertEquals((await tables.call("GET", "/ssh-config")).body.included, false);
    const written = await tables.call("POST", "/ssh-config");
    assertEquals([written.body.included, written.body.hosts.map((h: { host: string }) => h.host)], [true, [
      "dock-far",
    ]]);
    assert((await Deno.readTextFile(`${world.home}/.ssh/config`)).startsWith("Include"));
    // No iptables on this PATH: adding says how, removing has nothing to do; both answer their steps.
    const add = lines((await tables.call("POST", "/setup/port80")).text);
    assert(String(add.at(-1)?.error).includes("iptables is not installed"), JSON.stringify(add));
    assertEquals(lines((await tables.call("POST", "/setup/port80?remove=1")).text).at(-1), { done: true });
    tables.assertEveryRouteSucceeded();
  } finally {
    await world.close();
  }
});

Deno.test("local tools routes: refusals (strict body, unknown editors, networks and boxes, the token)", async () => {
  const world = await toolsApp();
  try {
    const { tables } = world;
    await tables.refusesUnknownField("POST", "/editors/open", { editor: "vscode", box: "here", path: "/x" });
    const unknown = await tables.call("POST", "/editors/open", {
      json: { editor: "ed", box: "here", path: "/x" },
    });
    assertEquals([unknown.status, unknown.body.error.code], [400, "unknown_editor"]);
    const missing = await tables.call("POST", "/editors/open", {
      json: { editor: "zed", box: "here", path: "/x" },
    });
    assertEquals([missing.status, missing.body.error.code], [422, "no_editor"]);
    assertEquals(
      (await tables.call("POST", "/editors/open", { json: { editor: "vscode", box: "ghost", path: "/x" } }))
        .status,
      404,
    );
    const twoLines = await tables.call("POST", "/editors/open", {
      json: { editor: "vscode", box: "here", path: "/x", file: "a\nb" },
    });
    assertEquals(twoLines.status, 400);
    assertEquals((await tables.call("GET", "/networks/zerotier/peers")).status, 404);
    assertEquals((await tables.call("POST", "/networks/zerotier/login")).status, 404);
    assertEquals((await tables.call("GET", `/discover?network=${"x".repeat(65)}`)).status, 400);
    await tables.assertEveryRouteNeedsToken();
    assert(!(await Deno.stat(`${world.home}/.ssh`).catch(() => null)), "nothing was written");
  } finally {
    await world.close();
  }
});
