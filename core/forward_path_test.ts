import { assertEquals, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import {
  checkSegment,
  forwardPath,
  MAX_FORWARD_PATH,
  originPath,
  pathSegments,
  requestPath,
  requestQuery,
} from "./forward_path.ts";

function refused(run: () => unknown): void {
  const error = assertThrows(run, DockError) as DockError;
  assertEquals([error.code, error.status], ["invalid_path", 400]);
}

Deno.test("requestPath keeps the path as it came: dot segments, backslashes and escapes", () => {
  assertEquals(requestPath("http://h:1/a/b/../c?x=1#f"), "/a/b/../c");
  assertEquals(requestPath("http://h/a\\..\\c"), "/a\\..\\c");
  assertEquals(requestPath("http://h/a/%2e%2e/c"), "/a/%2e%2e/c");
  assertEquals(requestPath("http://h"), "/");
  assertEquals(requestQuery("http://h/a?x=1&y=%3F#f"), "?x=1&y=%3F");
  assertEquals(requestQuery("http://h/a"), "");
});

Deno.test("pathSegments decodes each segment once and keeps names that are only names", () => {
  assertEquals(pathSegments("ui/panel.html"), ["ui", "panel.html"]);
  assertEquals(pathSegments("a%20b/%C3%A9"), ["a b", "é"]);
  assertEquals(pathSegments("x..y/.hidden/a."), ["x..y", ".hidden", "a."]);
  assertEquals(pathSegments("a/", { trailingSlash: true }), ["a", ""]);
  assertEquals(pathSegments("", { empty: true }), []);
});

Deno.test("pathSegments refuses every trick with 400 invalid_path", () => {
  for (
    const path of [
      "",
      "a/",
      "a//b",
      "..",
      "a/../b",
      ".",
      "%2e%2e",
      "%2E%2e",
      ".%2e",
      "%2e",
      "x%2F..%2Fsessions",
      "x%2f..",
      "x%5C..",
      "x\\..",
      "..%2Fenv",
      "%252e%252e",
      "x%252F..",
      "a%00",
      "a%0a",
      "a%0D",
      "a%7f",
      "a%c2%85",
      "%c0%ae%c0%ae",
      "%c0%af",
      "%ed%a0%80",
      "%",
      "%zz",
      "panel.html%3F..",
      "panel.html%23x",
      "x".repeat(MAX_FORWARD_PATH + 1),
    ]
  ) {
    refused(() => pathSegments(path));
  }
  refused(() => pathSegments("a//", { trailingSlash: true }));
  refused(() => checkSegment("a/b"));
});

Deno.test("forwardPath encodes each segment again and stays under its prefix", () => {
  assertEquals(forwardPath("/v1/", ["sessions", "a b", "é"]), "/v1/sessions/a%20b/%C3%A9");
  assertEquals(forwardPath("/v1/plugins/p/", ["ui", "x:y@z"]), "/v1/plugins/p/ui/x%3Ay%40z");
  assertEquals(forwardPath("/", ["d", ""]), "/d/");
  // Whatever a URL parser does with the result, it stays where it was built.
  for (const segments of [["..x"], ["x.."], ["%"], ["a?b"]]) {
    const path = forwardPath("/v1/plugins/p/", segments);
    assertEquals(new URL(path, "http://h").pathname.startsWith("/v1/plugins/p/"), true, path);
  }
});

Deno.test("originPath passes a worktree server's path on, without NUL or control characters", () => {
  assertEquals(originPath(new URL("http://h/api/a%2Fb?q=1")), "/api/a%2Fb?q=1");
  assertEquals(originPath(new URL("http://h/a/../b")), "/b");
  for (
    const url of ["http://h/a%00", "http://h/a?x=%0a", "http://h/a%1F", "http://h/a%7F", "http://h/a%zz"]
  ) {
    refused(() => originPath(new URL(url)));
  }
});
