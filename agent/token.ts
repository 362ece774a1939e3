/**
 * The UI token: the bearer token every request to the agent's loopback API carries (spec 5). It is
 * created on first start at `<state>/client/ui-token` with mode 0600; whoever can read that file is
 * the user.
 *
 * @module
 */
import { dirname } from "../core/posix_path.ts";
import { writeAtomic } from "../core/files.ts";
import { base64url } from "../core/pairing_link.ts";

/** Reads the token, creating it (256 random bits, base64url) when missing. */
export async function ensureToken(path: string): Promise<string> {
  try {
    // Synchronous: a command's first asynchronous file read starts Deno's blocking-I/O thread (~1 ms of
    // a ~20 ms command); the file is a few bytes.
    const token = Deno.readTextFileSync(path).trim();
    if (token.length >= 32) return token;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const token = base64url(crypto.getRandomValues(new Uint8Array(32)));
  await writeAtomic(path, token + "\n", 0o600);
  return token;
}
