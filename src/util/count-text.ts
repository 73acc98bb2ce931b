// Counts and lists in messages: counts with thousands grouped ("10,000 events"). Not through toLocaleString: its first
// call loads ICU's number formatting, which then stays resident for the rest of the process (a watch's
// shutdown report would pay it last of all, at its peak; BENCHMARKS.md, "Where the time goes now").

/** `count` (a whole number) with a comma between each group of three digits. */
export function groupedCount(count: number): string {
  if (!Number.isSafeInteger(count)) return String(count);
  const digits = String(Math.abs(count));
  let grouped = digits.slice(0, digits.length % 3 || 3);
  for (let index = grouped.length; index < digits.length; index += 3) {
    grouped += `,${digits.slice(index, index + 3)}`;
  }
  return count < 0 ? `-${grouped}` : grouped;
}

/** A count and the word it counts, plural unless one: `1 event`, `2 events`, `10,000 events`. */
export function plural(count: number, word: string): string {
  return `${groupedCount(count)} ${word}${count === 1 ? '' : 's'}`;
}

/** Items in words: `a`, `a and b`, `a, b and c`. */
export function andList(items: readonly string[]): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}
