// Small statistics helpers for the benchmarks: medians and percentiles of samples, and A/B ratios
// measured pair by pair (A, B, A, B …) so that a machine whose speed drifts (a shared, noisy
// 2-core box) affects both sides of each pair alike.

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  const lowValue = sorted[low]!;
  return lowValue + (sorted[high]! - lowValue) * (position - low);
}

export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

export interface Spread {
  min: number;
  median: number;
  max: number;
}

export function spread(values: readonly number[]): Spread {
  return { min: Math.min(...values), median: median(values), max: Math.max(...values) };
}

/** Rounds for display and for the JSON result (3 significant digits is what a noisy machine supports). */
export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value) || value === 0) return value;
  const magnitude = Math.floor(Math.log10(Math.abs(value)));
  const factor = 10 ** Math.max(0, digits - 1 - magnitude);
  return Math.round(value * factor) / factor;
}

export interface PairedResult {
  a: number[];
  b: number[];
  /** a[i] / b[i] for each pair. */
  ratios: number[];
}

/**
 * Runs `a` then `b`, `pairs` times (after `warmup` unrecorded pairs), and returns each side's
 * figures and the ratio of each pair. Each function returns the figure of one run.
 */
export async function paired(
  pairs: number,
  warmup: number,
  a: () => Promise<number> | number,
  b: () => Promise<number> | number,
): Promise<PairedResult> {
  const samples = await pairedSamples(pairs, warmup, a, b);
  return { a: samples.a, b: samples.b, ratios: samples.a.map((value, index) => value / samples.b[index]!) };
}

/**
 * The pairing of `paired` for runs that yield more than one figure (a time and a peak RSS, say):
 * each side's samples in run order, sample i of `a` paired with sample i of `b`.
 */
export async function pairedSamples<T>(
  pairs: number,
  warmup: number,
  a: () => Promise<T> | T,
  b: () => Promise<T> | T,
): Promise<{ a: T[]; b: T[] }> {
  const result: { a: T[]; b: T[] } = { a: [], b: [] };
  for (let index = 0; index < warmup + pairs; index++) {
    // Alternate which side goes first, so neither always runs on a warmer (or cooler) machine.
    const first = index % 2 === 0;
    const x = first ? await a() : await b();
    const y = first ? await b() : await a();
    if (index < warmup) continue;
    result.a.push(first ? x : y);
    result.b.push(first ? y : x);
  }
  return result;
}

/** Each pair's a/b of one figure of multi-figure samples, with the spread of each side. */
export function pairedSpread<T>(
  samples: { a: T[]; b: T[] },
  pick: (sample: T) => number,
): { a: Spread; b: Spread; ratio: Spread } {
  const a = samples.a.map(pick);
  const b = samples.b.map(pick);
  return { a: spread(a), b: spread(b), ratio: spread(a.map((value, index) => value / b[index]!)) };
}
