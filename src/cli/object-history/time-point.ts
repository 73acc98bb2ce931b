// A point in an object's history as `show --at`, `diff --from/--to` and `blame --at` take it: a time
// (`2026-11-27T13:50:00Z`; `2026-11-27 13:50`, `2026-11-27` and `13:50` today in local time), a duration ago (`30m`, `2h`, `1h30m ago`),
// `now`, or the id of a recorded event (`<uid>:<resourceVersion>`, as `history -o json` prints it): the
// version right after that event.
import { checkDuration } from '../../util/duration.ts';
import { invalidSetting } from '../../util/errors.ts';

export type TimePoint =
  | { kind: 'time'; ms: number }
  /** The version right after the event with this id. */
  | { kind: 'event'; id: string };

/** `13:50`, `13:50:07`: today, local time. */
const CLOCK = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/;
/** A date, with or without a time: what Date.parse reads the same everywhere (ISO 8601). */
const DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/i;
/** An event id: the object's uid, a colon, the resourceVersion. */
const EVENT_ID = /^[^\s:]+:\d+$/;

const EXPECTED =
  'expected a time (2026-11-27T13:50:00Z, 13:50), a duration ago (30m, 2h), now, or an event id (<uid>:<resourceVersion>)';

/** Reads `text` (the value of `flag`); a UsageError naming the flag when it is none of the forms. */
export function parseTimePoint(flag: string, text: string, now: number): TimePoint {
  const trimmed = text.trim();
  if (trimmed === 'now') return { kind: 'time', ms: now };
  const clock = CLOCK.exec(trimmed);
  if (clock) {
    const [hours, minutes, seconds] = [clock[1], clock[2], clock[3] ?? '0'].map(Number) as [
      number,
      number,
      number,
    ];
    if (hours > 23 || minutes > 59 || seconds > 59) throw invalidSetting(flag, text, EXPECTED);
    const today = new Date(now);
    today.setHours(hours, minutes, seconds, 0);
    return { kind: 'time', ms: today.getTime() };
  }
  const ago = trimmed.replace(/\s+ago$/, '');
  const duration = checkDuration(ago, { maxMs: Number.POSITIVE_INFINITY, allowZero: true });
  if (duration.ms !== undefined) return { kind: 'time', ms: now - duration.ms };
  if (DATE.test(trimmed)) {
    // Without a zone, local time: Date.parse reads "2026-11-27T13:50" so, but a date alone as UTC
    // midnight (ECMAScript's rule), so a date alone is given its local midnight here.
    const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(trimmed);
    const ms = Date.parse(dateOnly ? `${trimmed}T00:00` : trimmed.replace(' ', 'T'));
    if (!Number.isNaN(ms)) return { kind: 'time', ms };
  }
  if (EVENT_ID.test(trimmed)) return { kind: 'event', id: trimmed };
  throw invalidSetting(flag, text, EXPECTED);
}

/** How a point reads in messages and headers. */
export function describePoint(point: TimePoint): string {
  return point.kind === 'time' ? new Date(point.ms).toISOString() : `event ${point.id}`;
}
