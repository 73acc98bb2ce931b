// A unified diff of two texts (`diff -u`, as `kubectl diff` prints it): `---`/`+++` headers, `@@` hunks with
// three lines of context. The one diff of two versions: `kubediff diff` prints these lines, the page
// (src/ui) receives them uncoloured and lays them out. The line matching is the `diff` package's (Myers' algorithm; docs/history.md
// says why that package rather than our own). Bounded: past MAX_EDIT_LENGTH differing lines the search
// stops and the two texts are shown as one hunk, all removed then all added (still a correct patch).
import { Chalk } from 'chalk';
import { structuredPatch } from 'diff';
import { printable } from '../util/terminal-text.ts';

/** One side of the diff: a label (`deployments.apps/shop/web`) and its header (a time), and the text. */
export interface DiffSide {
  label: string;
  header: string;
  /** undefined: the side does not exist (`/dev/null`). */
  text: string | undefined;
}

export interface DiffRender {
  color: boolean;
  /** On a terminal: every line through printable(), so that no value acts on the terminal. */
  terminal: boolean;
}

/** How many differing lines the matching looks for before giving up on a fine diff. */
export const MAX_EDIT_LENGTH = 10_000;
const CONTEXT = 3;

/** The diff's lines (no newline at their ends); an empty list when the texts are the same. */
export function unifiedDiff(a: DiffSide, b: DiffSide, render: DiffRender): string[] {
  const before = a.text ?? '';
  const after = b.text ?? '';
  if (before === after && (a.text === undefined) === (b.text === undefined)) return [];
  const patch = structuredPatch('', '', before, after, undefined, undefined, {
    context: CONTEXT,
    maxEditLength: MAX_EDIT_LENGTH,
  });
  const hunks = patch?.hunks ?? [wholeHunk(before, after)];
  const chalk = new Chalk({ level: render.color ? 1 : 0 });
  const safe = (line: string) => (render.terminal ? printable(line) : line);
  const lines = [
    chalk.bold(`--- ${a.text === undefined ? '/dev/null' : safe(a.label)}\t${printable(a.header)}`),
    chalk.bold(`+++ ${b.text === undefined ? '/dev/null' : safe(b.label)}\t${printable(b.header)}`),
  ];
  for (const hunk of hunks) {
    lines.push(
      chalk.cyan(`@@ -${range(hunk.oldStart, hunk.oldLines)} +${range(hunk.newStart, hunk.newLines)} @@`),
    );
    for (const line of hunk.lines) {
      const shown = safe(line);
      lines.push(line[0] === '-' ? chalk.red(shown) : line[0] === '+' ? chalk.green(shown) : shown);
    }
  }
  return lines;
}

/** `start,count` as diff writes it: `start` alone for one line; an empty range starts at the line before. */
function range(start: number, count: number): string {
  if (count === 1) return String(start);
  return `${count === 0 ? start - 1 : start},${count}`;
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  return (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
}

/** Every line of `before` removed, every line of `after` added: the diff past the matching's bound. */
function wholeHunk(before: string, after: string) {
  const removed = splitLines(before);
  const added = splitLines(after);
  return {
    oldStart: 1,
    oldLines: removed.length,
    newStart: 1,
    newLines: added.length,
    lines: [...removed.map((line) => `-${line}`), ...added.map((line) => `+${line}`)],
  };
}
