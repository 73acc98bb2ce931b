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
  const result: PairedResult = { a: [], b: [], ratios: [] };
  for (let index = 0; index < warmup + pairs; index++) {
    // Alternate which side goes first, so neither always runs on a warmer (or cooler) machine.
    const first = index % 2 === 0;
    const x = first ? await a() : await b();
    const y = first ? await b() : await a();
    if (index < warmup) continue;
    const valueA = first ? x : y;
    const valueB = first ? y : x;
    result.a.push(valueA);
    result.b.push(valueB);
    result.ratios.push(valueA / valueB);
  }
  return result;
}
