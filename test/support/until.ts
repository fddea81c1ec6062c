/** Polls `probe` every 20 ms until `done` says so or `timeoutMs` passed; returns the last value either way. */
export async function until<T>(probe: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 5000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (done(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}
