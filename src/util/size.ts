// Sizes as people write them (64MB, 1GB, 500k; binary units), for every flag, config key and environment
// variable that takes one, and back for log lines.
import { invalidSetting } from './errors.ts';

const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
};

const SIZE_PROBLEM = 'use a size such as 64MB or 1GB';

/** Bytes, or undefined when `text` is not a size. */
function bytesOf(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const unit = UNITS[(match?.[2] ?? 'x').toLowerCase()];
  if (!match || unit === undefined || Number(match[1]) <= 0) return undefined;
  return Math.round(Number(match[1]) * unit);
}

/** Why `text` is not a size, a phrase; undefined when it is one. */
export function sizeProblem(text: string): string | undefined {
  return bytesOf(text) === undefined ? SIZE_PROBLEM : undefined;
}

/** Bytes; a UsageError naming the flag or environment variable `name` otherwise. */
export function parseSize(name: string, text: string): number {
  const bytes = bytesOf(text);
  if (bytes === undefined) throw invalidSetting(name, text, SIZE_PROBLEM);
  return bytes;
}

/** `bytes` for log lines: 512 B, 20 KiB, 1.5 MiB, 64 MiB. */
export function formatSize(bytes: number): string {
  const [value, unit] =
    bytes >= 1024 ** 3
      ? [bytes / 1024 ** 3, 'GiB']
      : bytes >= 1024 ** 2
        ? [bytes / 1024 ** 2, 'MiB']
        : bytes >= 1024
          ? [bytes / 1024, 'KiB']
          : [bytes, 'B'];
  return `${value >= 10 || unit === 'B' ? Math.round(value) : Math.round(value * 10) / 10} ${unit}`;
}
