/** `name{labels} value` lines of the Prometheus text, as a lookup by the exact series. */
export function parseMetrics(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

/** The sum of every series of one metric, whatever its labels. */
export function metricTotal(series: Map<string, number>, name: string): number {
  let total = 0;
  for (const [key, value] of series) if (key === name || key.startsWith(`${name}{`)) total += value;
  return total;
}
