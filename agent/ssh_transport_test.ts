import { assertEquals } from "../tests/assert.ts";
import { tunnelArgs } from "./ssh_transport.ts";

Deno.test("the transport's ssh forwards a loopback port to the box's port on its loopback, interactive, without prompts", () => {
  const args = tunnelArgs(
    { destination: "me@[fd00::5]:2222", identity: "/k/id", boxPort: 1379, localPort: 41000 },
    { control: "/s/client/ssh/devbox.sock", config: "/c/ssh_config" },
  );
  assertEquals(args, [
    "-tt",
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=15",
    "-o",
    "ServerAliveInterval=15",
    "-o",
    "ServerAliveCountMax=3",
    "-o",
    "ExitOnForwardFailure=yes",
    "-o",
    "ControlMaster=auto",
    "-o",
    "ControlPath=/s/client/ssh/devbox.sock",
    "-F",
    "/c/ssh_config",
    "-i",
    "/k/id",
    "-o",
    "IdentitiesOnly=yes",
    "-p",
    "2222",
    "-l",
    "me",
    "-L",
    "127.0.0.1:41000:127.0.0.1:1379",
    "--",
    "fd00::5",
    "exec tail -f /dev/null",
  ]);
  // A Host of the SSH configuration: its own port and user, nothing added.
  const plain = tunnelArgs({ destination: "testbox", boxPort: 1379, localPort: 41000 }, {
    control: "/c.sock",
  });
  assertEquals(plain.slice(-4), [
    "127.0.0.1:41000:127.0.0.1:1379",
    "--",
    "testbox",
    "exec tail -f /dev/null",
  ]);
  assertEquals(plain.includes("-p") || plain.includes("-l") || plain.includes("-F"), false);
});
