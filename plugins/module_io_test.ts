import { assertEquals } from "../tests/assert.ts";
import { fetchInput, fetchResponse } from "./module_io.ts";

Deno.test("a plugin's fetch sees the path under its fn, the query as it came, and none of the caller's credentials", async () => {
  const request = new Request("http://localhost/v1/plugins/p/fn/a/b?x=1&y=%20z", {
    method: "POST",
    headers: {
      Authorization: "Bearer secret",
      Cookie: "dock=secret",
      "Proxy-Authorization": "Basic secret",
      "X-Dock-Token": "secret",
      "X-Mine": "kept",
      "content-type": "text/plain",
    },
    body: "hi",
  });
  const input = await fetchInput("p", "/a/b", request) as {
    method: string;
    url: string;
    headers: [string, string][];
    body?: string;
  };
  assertEquals(input.method, "POST");
  assertEquals(input.url, "http://p.plugin/a/b?x=1&y=%20z");
  assertEquals(input.headers, [["content-type", "text/plain"], ["x-mine", "kept"]]);
  assertEquals(atob(input.body!), "hi");
  const bare = await fetchInput("p", "/", new Request("http://localhost/v1/plugins/p/fn/"));
  assertEquals((bare as { url: string; body?: string }).url, "http://p.plugin/");
  assertEquals("body" in (bare as object), false);
});

Deno.test("a plugin's answer: hop headers left out, a status out of range is a 502, HEAD and 204 carry no body", async () => {
  const answer = {
    status: 201,
    headers: [["x-a", "b"], ["Transfer-Encoding", "chunked"], ["connection", "close"]] as [string, string][],
    body: btoa("made"),
  };
  const response = fetchResponse(answer, new Request("http://localhost/"));
  assertEquals(response.status, 201);
  assertEquals([...response.headers], [["x-a", "b"]]);
  assertEquals(await response.text(), "made");
  assertEquals(fetchResponse({ ...answer, status: 99 }, new Request("http://localhost/")).status, 502);
  assertEquals(await fetchResponse(answer, new Request("http://localhost/", { method: "HEAD" })).text(), "");
  assertEquals(await fetchResponse({ ...answer, status: 204 }, new Request("http://localhost/")).text(), "");
});
