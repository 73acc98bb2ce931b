// Figure 20 in BENCHMARKS.md (bench/ui-search.ts): the history's search against the plain window, from
// bench/results/search.json.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { markdownTable } from './lib/markdown.ts';

export interface SearchTiming {
  /** Median ms of the window's timeline (marks or density, every event of the window counted). */
  timelineMs: number;
  /** Median ms of the window's first page of events (100, newest first). */
  pageMs: number;
  /** Events on that page. */
  found: number;
}

export interface SearchFigures {
  date?: string;
  events: number;
  runs: number;
  loadAverage: number;
  loadAverageAtEnd?: number;
  stores: {
    store: string;
    figures: {
      plain: SearchTiming;
      searches: (SearchTiming & { q: string })[];
      /** The same searches with the search column empty: in the events' JSON, as before it. */
      inJson: (SearchTiming & { q: string })[];
    };
  }[];
}

export const SEARCH_RESULT_FILE = path.join(import.meta.dirname, 'results', 'search.json');

const ms = (value: number) => `${value.toFixed(1)} ms`;
const times = (value: number, base: number) => `${(value / base).toFixed(2)}×`;

export function searchSection(figures?: SearchFigures): string {
  const heading = "## 20. The history's search\n";
  let result = figures;
  if (!result) {
    if (!existsSync(SEARCH_RESULT_FILE))
      return `${heading}\nNot measured yet: \`npm run bench:search\` (bench/ui-search.ts) writes bench/results/search.json and this section.\n`;
    result = JSON.parse(readFileSync(SEARCH_RESULT_FILE, 'utf8')) as SearchFigures;
  }
  const events = result.events.toLocaleString('en-US');
  const tables = result.stores.map(({ store, figures: f }) => {
    const rows = [
      [
        'the window (no search)',
        ms(f.plain.timelineMs),
        '1.00×',
        ms(f.plain.pageMs),
        String(f.plain.found),
        '',
      ],
      ...f.searches.map((s, i) => {
        const json = f.inJson[i]!;
        return [
          `search \`${s.q}\``,
          ms(s.timelineMs),
          times(s.timelineMs, f.plain.timelineMs),
          ms(s.pageMs),
          String(s.found),
          `${ms(json.timelineMs)} (${times(json.timelineMs, f.plain.timelineMs)})`,
        ];
      }),
    ];
    return `**${store}**\n\n${markdownTable(
      ['', 'timeline', 'against the window', 'first page', 'events on it', 'timeline, searching the JSON'],
      rows,
    )}`;
  });
  return `${heading}
\`npm run bench:search\` (bench/ui-search.ts)${result.date ? ` on ${result.date.slice(0, 10)}` : ''}: a window of ${events} generated
events (test/helpers/generated-history.ts), read through each store's TimelineReader as \`kubediff ui\` reads it:
the window's timeline (every event of it counted into marks or density) and its first page of 100 events, then the
same with a search (\`q\`) for a name, a user and a path; medians of ${result.runs} runs, in the same run. A search
reads each event's search column (docs/ui.md, Search), not its JSON; the last column is the same search with that
column emptied, in the events' JSON, as it was before the column (and still is for events recorded by an older
kubediff). A search that matches few events makes the first page scan the window; the plain page reads 100 rows.
A search can take less than the plain window: fewer events match, so fewer are counted into the timeline.
Load average ${result.loadAverage.toFixed(1)} at the start${result.loadAverageAtEnd !== undefined ? `, ${result.loadAverageAtEnd.toFixed(1)} at the end` : ''} (2 cores shared).

${tables.join('\n\n')}
`;
}
