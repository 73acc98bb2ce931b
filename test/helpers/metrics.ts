// Reads kubediff's metrics the way Prometheus does, for tests that assert on a metric.

/** `name{labels}` → value, from the Prometheus text format. */
export function parseMetrics(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    values.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return values;
}

/** The metrics a running kubediff serves at `${base}/metrics` (`--listen`). */
export async function scrapeMetrics(base: string): Promise<Map<string, number>> {
  return parseMetrics(await (await fetch(`${base}/metrics`)).text());
}
