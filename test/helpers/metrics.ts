// Reading kubediff's Prometheus /metrics (--listen) in tests.

/** `name{labels}` → value, from the Prometheus text format served at `${base}/metrics`. */
export async function scrapeMetrics(base: string): Promise<Map<string, number>> {
  const response = await fetch(`${base}/metrics`);
  return parseMetrics(await response.text());
}

/** `name{labels}` → value, from the Prometheus text format. */
export function parseMetrics(body: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of body.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    values.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return values;
}

/** What kubediff prints once its --listen server is up; the first group is the base URL. */
export const SERVING = /serving \/healthz, \/readyz, \/startupz and \/metrics on (http:\/\/[\d.:]+)/;
