// Time as kubediff reads it: a monotonic clock for how long something took, and timestamps as it
// writes them: RFC 3339 in UTC with milliseconds ("2026-11-24T02:17:03.512Z"),
// as Date.prototype.toISOString writes them. Not through it, though: in V8, toISOString sets up the
// process's date cache with the local time zone, which pages in ICU's zone data (about 1.5 MiB resident,
// BENCHMARKS.md "Where the memory goes"), while the UTC fields read below need none of it.

/** `ms` (milliseconds since the epoch; default now) as "YYYY-MM-DDTHH:MM:SS.mmmZ". */
export function isoTimestamp(ms: number = Date.now()): string {
  const date = new Date(ms);
  const year = date.getUTCFullYear();
  // Beyond four digits toISOString writes an expanded year (±YYYYYY): rare enough to leave to it.
  if (year < 0 || year > 9999 || Number.isNaN(year)) return date.toISOString();
  return (
    `${pad(year, 4)}-${pad(date.getUTCMonth() + 1, 2)}-${pad(date.getUTCDate(), 2)}` +
    `T${pad(date.getUTCHours(), 2)}:${pad(date.getUTCMinutes(), 2)}:${pad(date.getUTCSeconds(), 2)}` +
    `.${pad(date.getUTCMilliseconds(), 3)}Z`
  );
}

/**
 * How a terminal line prints a recorded time (an RFC 3339 UTC timestamp as above): its clock time,
 * `10:31:07Z`, or with its date, `2026-11-27 10:31:07Z`. Always UTC, and marked so, since the times
 * the commands take without a zone are local (docs/history.md).
 */
export function printedTime(iso: string, withDate = false): string {
  const time = `${iso.slice(11, 19)}Z`;
  return withDate ? `${iso.slice(0, 10)} ${time}` : time;
}

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}

/**
 * Milliseconds on a clock that never jumps (for how long something took or has been quiet), like
 * performance.now(), whose first use loads Node's perf_hooks (a dozen internal modules) into a watch.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
