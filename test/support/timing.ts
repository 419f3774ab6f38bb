/**
 * `calls` answers of `call`, each read whole, after one to warm up: the median and the slowest, in ms. A status
 * other than 200 fails the caller's test (what is timed must be an answer, not an error).
 */
export async function timeCalls(call: () => Promise<Response>, calls: number): Promise<{ p50: number; max: number }> {
  await (await call()).arrayBuffer();
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    const response = await call();
    await response.arrayBuffer();
    times.push(performance.now() - started);
    if (response.status !== 200) throw new Error(`${response.url} answered ${response.status} while timed`);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length / 2)], max: times[times.length - 1] };
}
