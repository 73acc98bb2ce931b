// Reads kubediff's /metrics (`--listen`) the way Prometheus does, for tests that assert on a metric.

/** `name{labels}` → value, from the Prometheus text format served at `${base}/metrics`. */
export async function scrapeMetrics(base: string): Promise<Map<string, number>> {
  const body = await (await fetch(`${base}/metrics`)).text();
  const values = new Map<string, number>();
  for (const line of body.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    values.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return values;
}
