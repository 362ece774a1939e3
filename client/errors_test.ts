import { assert, assertEquals } from "../tests/assert.ts";
import { DockError, TransportError } from "./errors.ts";

Deno.test("errors: a DockError of another copy of this module is a DockError (a bundle calling sources)", async () => {
  // A second copy: the same file under another URL is another module, with its own classes.
  const other = await import(`./errors.ts?copy=${crypto.randomUUID()}`) as typeof import("./errors.ts");
  assert(other.DockError !== DockError);
  const foreign = new other.DockError("already_running", "a daemon already serves");
  assert(foreign instanceof DockError);
  assert(new other.TransportError("no", { neverSent: true }) instanceof DockError);
  assert(new DockError("x", "y") instanceof other.DockError);
  // Subclasses keep the ordinary check; other values are no DockError.
  assertEquals(foreign instanceof TransportError, false);
  assertEquals(new DockError("x", "y") instanceof TransportError, false);
  const others = [new Error("x"), undefined, null, 5, "DockError", Object.create(null), {
    name: "DockError",
  }];
  others.forEach((value, i) => assertEquals(value instanceof DockError, false, `others[${i}]`));
});
