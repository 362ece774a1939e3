/**
 * `deno task package [TARGET…] [--all]`: builds the packages for boxes (see `package/build.ts`) into `dist/`:
 * this machine's target when none is named. `deno task install` (`--install`): builds this machine's and
 * installs it here under `~/.dock/` (`$DOCK_HOME`), the commands linked in `~/.dock/bin/`.
 *
 * @module
 */
import { buildPackage } from "../package/build.ts";
import { hostTarget, parseTarget, type Target, targetName, TARGETS } from "../package/release.ts";
import { installHere } from "../package/install.ts";
import { clientPaths } from "../core/paths.ts";
import { keepInstalled, megabytes } from "../agent/packages.ts";

const args = Deno.args;
const install = args.includes("--install");
if (install && args.some((arg) => arg !== "--install")) {
  console.error("dock: --install builds and installs this machine's package alone; name no target");
  Deno.exit(2);
}
const targets: Target[] = args.includes("--all")
  ? [...TARGETS]
  : args.filter((arg) => !arg.startsWith("-")).map(parseTarget);
if (!targets.length) {
  const host = hostTarget();
  if (!host) {
    throw new Error(
      `this machine (${Deno.build.os}/${Deno.build.arch}) is no target; name one of ${
        TARGETS.map(targetName).join(", ")
      }`,
    );
  }
  targets.push(host);
}
for (const target of targets) {
  const started = performance.now();
  const built = await buildPackage({
    target,
    progress: (line) => console.error(`${targetName(target)}: ${line}`),
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `${built.file}  ${
      megabytes(built.bytes)
    }  deno ${built.manifest.deno}  ${built.manifest.commit}  (${seconds} s)`,
  );
  console.log(`${built.withoutRuntime.file}  ${megabytes(built.withoutRuntime.bytes)}`);
  if (built.zstd) console.log(`${built.zstd.file}  ${megabytes(built.zstd.bytes)}`);
  if (install) {
    const { home } = clientPaths();
    const { release, folder, bin, again } = await installHere(built, home);
    console.log(
      `${
        again ? "installed already" : "installed"
      }: dock ${release.version}+${release.commit} in ${home}/versions/${folder}`,
    );
    // The agent this installs sends this very package to boxes: kept for it, it is not packed again.
    console.log(`kept for dock add ssh and upgrade: ${await keepInstalled(clientPaths(), built)}`);
    // The agent running an older build goes: the next dock command starts the one just installed.
    const { replaceAgent } = await import("./agent.ts");
    const replaced = await replaceAgent(`${release.version}+${release.commit}`).catch((error) => {
      console.error(`dock: the running agent could not be stopped (${error.message}): dock agent restart`);
      return null;
    });
    if (replaced) console.log(`stopped the agent (${replaced}): the next dock command starts this one`);
    const onPath = (Deno.env.get("PATH") ?? "").split(":").includes(bin);
    console.log(onPath ? `${bin}/dock and dockd are on your PATH` : `add ${bin} to your PATH`);
  }
}
