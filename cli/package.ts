/**
 * `deno task package [TARGET…] [--all]`: builds the packages for boxes (see `package/build.ts`) into `dist/`:
 * this machine's target when none is named.
 *
 * @module
 */
import { buildPackage, hostTarget, parseTarget, type Target, targetName, TARGETS } from "../package/build.ts";
import { megabytes } from "../agent/packages.ts";

const args = Deno.args;
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
}
