/**
 * Polls until something a test brought about has happened, and returns the value that showed it. The limit only
 * bounds a hang (a failing test fails instead of stalling the suite); it never decides a result.
 */
export async function until<T>(
  what: string,
  read: () => T | Promise<T>,
  ok: (value: T) => boolean = Boolean,
  limitMs = 120_000,
): Promise<T> {
  const end = Date.now() + limitMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
