/// <reference lib="dom" />
// Two versions of an object as a code review shows them: the unified diff of their YAML that the server
// sends (the lines `kubediff diff` prints), laid out unified (narrow screens) and side by side (wide
// ones; the stylesheet shows one of the two), every line wrapped, and a value too long to read at a
// glance (a last-applied-configuration annotation) folded after FOLD_AT characters, one click away.

/** One line of the diff: a file header, a hunk header, or a line of context, removed or added. */
export interface DiffLine {
  kind: 'file' | 'hunk' | 'context' | 'removed' | 'added';
  text: string;
  /** Its line number in version A (context, removed) or B (context, added). */
  a?: number;
  b?: number;
}

/** A row side by side: what A had (left) beside what B has (right); a hunk header spans both. */
export interface SplitRow {
  hunk?: string;
  left?: DiffLine;
  right?: DiffLine;
}

/** Characters of a line shown before the rest is folded away. */
export const FOLD_AT = 300;

/** The unified diff's lines, numbered. */
export function parseUnified(lines: readonly string[]): DiffLine[] {
  const parsed: DiffLine[] = [];
  let a = 0;
  let b = 0;
  for (const line of lines) {
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (line.startsWith('--- ') || line.startsWith('+++ ')) parsed.push({ kind: 'file', text: line });
    else if (hunk) {
      a = Number(hunk[1]);
      b = Number(hunk[2]);
      parsed.push({ kind: 'hunk', text: line });
    } else if (line.startsWith('-')) parsed.push({ kind: 'removed', text: line.slice(1), a: a++ });
    else if (line.startsWith('+')) parsed.push({ kind: 'added', text: line.slice(1), b: b++ });
    else parsed.push({ kind: 'context', text: line.slice(1), a: a++, b: b++ });
  }
  return parsed;
}

/** Side by side: a run of removed lines beside the run of added lines that follows it, row by row. */
export function splitRows(lines: readonly DiffLine[]): SplitRow[] {
  const rows: SplitRow[] = [];
  let removed: DiffLine[] = [];
  let added: DiffLine[] = [];
  const flush = () => {
    for (let index = 0; index < Math.max(removed.length, added.length); index++) {
      const row: SplitRow = {};
      if (removed[index]) row.left = removed[index];
      if (added[index]) row.right = added[index];
      rows.push(row);
    }
    removed = [];
    added = [];
  };
  for (const line of lines) {
    if (line.kind === 'removed') {
      if (added.length > 0) flush();
      removed.push(line);
    } else if (line.kind === 'added') added.push(line);
    else {
      flush();
      if (line.kind === 'hunk') rows.push({ hunk: line.text });
      else if (line.kind === 'context') rows.push({ left: line, right: line });
    }
  }
  flush();
  return rows;
}

/** A line's text, folded after FOLD_AT characters: the rest behind a disclosure that says how much. */
export function lineText(text: string, visible: (text: string) => string): Node[] {
  const shown = visible(text);
  if (shown.length <= FOLD_AT) return [document.createTextNode(shown)];
  const fold = document.createElement('details');
  fold.className = 'fold';
  const summary = document.createElement('summary');
  summary.textContent = `… ${(shown.length - FOLD_AT).toLocaleString('en-US')} more characters`;
  fold.append(summary, shown.slice(FOLD_AT));
  return [document.createTextNode(shown.slice(0, FOLD_AT)), fold];
}

const SIGN: Record<DiffLine['kind'], string> = { file: '', hunk: '', context: ' ', removed: '-', added: '+' };

function cell(tag: 'td' | 'th', className: string, text: string): HTMLTableCellElement {
  const node = document.createElement(tag);
  node.className = className;
  node.textContent = text;
  return node;
}

/** The diff as a table of its own: line numbers, the sign (a screen reader reads it), the text. */
function lineCells(line: DiffLine | undefined, side: 'a' | 'b' | 'both', visible: (text: string) => string) {
  if (!line) return [cell('td', 'num', ''), cell('td', 'sign', ''), cell('td', 'text empty', '')];
  const number = side === 'a' ? line.a : side === 'b' ? line.b : undefined;
  const text = cell('td', 'text', '');
  text.append(...lineText(line.text, visible));
  return [
    cell('td', 'num', number === undefined ? '' : String(number)),
    cell('td', 'sign', SIGN[line.kind]),
    text,
  ];
}

/** The columns' widths (a fixed table takes them from here, not from its first row, a hunk header). */
function columns(kinds: readonly string[]): HTMLElement {
  const group = document.createElement('colgroup');
  for (const kind of kinds) {
    const column = document.createElement('col');
    column.className = kind;
    group.append(column);
  }
  return group;
}

export function renderDiff(lines: readonly string[], visible: (text: string) => string): HTMLElement {
  const parsed = parseUnified(lines);
  const box = document.createElement('div');
  box.className = 'diff';
  const files = parsed.filter((line) => line.kind === 'file');
  if (files.length > 0) {
    const header = document.createElement('pre');
    header.className = 'diff-files';
    // The tab between a label and its header, as `diff -u` writes it, shown as spaces.
    header.textContent = files.map((line) => visible(line.text.replace('\t', '   '))).join('\n');
    box.append(header);
  }
  const unified = document.createElement('table');
  unified.className = 'diff-unified';
  unified.append(columns(['num', 'num', 'sign', 'text']));
  unified.setAttribute('aria-label', 'Differences from version A to version B');
  for (const line of parsed) {
    if (line.kind === 'file') continue;
    const row = unified.insertRow();
    row.className = line.kind;
    if (line.kind === 'hunk') {
      const hunk = cell('td', 'hunk', visible(line.text));
      hunk.colSpan = 4;
      row.append(hunk);
      continue;
    }
    const [, sign, text] = lineCells(line, 'both', visible);
    row.append(
      cell('td', 'num', String(line.a ?? '')),
      cell('td', 'num', String(line.b ?? '')),
      sign!,
      text!,
    );
  }
  const split = document.createElement('table');
  split.className = 'diff-split';
  split.append(columns(['num', 'sign', 'text', 'num', 'sign', 'text']));
  split.setAttribute('aria-label', 'Version A beside version B');
  for (const entry of splitRows(parsed)) {
    const row = split.insertRow();
    if (entry.hunk !== undefined) {
      row.className = 'hunk';
      const hunk = cell('td', 'hunk', visible(entry.hunk));
      hunk.colSpan = 6;
      row.append(hunk);
      continue;
    }
    const left = lineCells(entry.left, 'a', visible);
    const right = lineCells(entry.right, 'b', visible);
    for (const [line, cells] of [
      [entry.left, left],
      [entry.right, right],
    ] as const) {
      if (line && line.kind !== 'context') for (const part of cells) part.classList.add(line.kind);
    }
    row.append(...left, ...right);
  }
  box.append(unified, split);
  return box;
}
