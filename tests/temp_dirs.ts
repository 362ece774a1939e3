/**
 * Temporary folders for unit tests that make homes and repositories: each test's folders are removed
 * when it ends, passed or failed.
 */

/** A `test` that cleans up after itself and the `tempHome` that makes its folders. */
export function tempFolders(prefix: string): {
  tempHome(): Promise<string>;
  test(name: string, fn: () => Promise<void> | void): void;
} {
  let temps: string[] = [];
  return {
    async tempHome() {
      const dir = await Deno.makeTempDir({ prefix });
      temps.push(dir);
      return dir;
    },
    test(name, fn) {
      Deno.test(name, async () => {
        try {
          await fn();
        } finally {
          for (const dir of temps) await Deno.remove(dir, { recursive: true });
          temps = [];
        }
      });
    },
  };
}
