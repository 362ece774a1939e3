import { assertEquals } from "../tests/assert.ts";
import { BUILD, compareVersions, isBehind, VERSION } from "./version.ts";

Deno.test("compareVersions compares dotted parts as numbers, not text", () => {
  const cases: [string, string, number][] = [
    ["0.10.0", "0.9.1", 1],
    ["0.9.1", "0.10.0", -1],
    ["1.2", "1.2.0", 0],
    ["1.2.1", "1.2", 1],
    ["2.0.0+abc", "2.0.0+def", 0],
    ["2.0.0-rc1", "1.9.9", 1],
    ["10", "9.99", 1],
  ];
  for (const [a, b, expected] of cases) assertEquals(compareVersions(a, b), expected, `${a} vs ${b}`);
  const sorted = ["1.10.0", "1.2.0", "1.9.3", "0.1"].sort(compareVersions);
  assertEquals(sorted, ["0.1", "1.2.0", "1.9.3", "1.10.0"]);
});

Deno.test("BUILD is the version and the commit", () => {
  assertEquals(BUILD.split("+")[0], VERSION);
  assertEquals(compareVersions(BUILD, VERSION), 0);
});

Deno.test("isBehind: an older version, or the same from another commit, unless the laptop runs a checkout", () => {
  assertEquals(isBehind("0.1.0+aaa", "0.2.0+bbb"), true);
  assertEquals(isBehind("0.2.0+bbb", "0.1.0+aaa"), false);
  assertEquals(isBehind("0.1.0+aaa", "0.1.0+bbb"), true);
  assertEquals(isBehind("0.1.0+aaa", "0.1.0+aaa"), false);
  assertEquals(isBehind("0.1.0+aaa", "0.1.0+dev"), false);
  assertEquals(isBehind("0.0.9+aaa", "0.1.0+dev"), true);
});
