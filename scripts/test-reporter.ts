// npm test's reporter: node's own `spec` reporter, unchanged, plus, just before its closing summary
// (`ℹ tests N` …), the list of what the run did not check: every skipped test or suite and every todo,
// with its file, its place and its reason (the string `skip` or `todo` was given). A suite skipped as a
// whole is one entry: its tests are never enumerated. Tests left out by --test-name-pattern are not
// reported by the runner, so not here either.
//
// When KUBEDIFF_TEST_REQUIRE_ALL=1 (CI, .ci/run), a run that left anything out says so in one sentence
// after the list, and scripts/run-tests.ts exits non-zero: it reads the count from the file named by
// KUBEDIFF_TEST_NOT_RUN_FILE, which this reporter writes as it prints the list.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { spec, type TestEvent } from 'node:test/reporters';
import { plural } from '../src/util/count-text.ts';

export const REQUIRE_ALL_ENV = 'KUBEDIFF_TEST_REQUIRE_ALL';
export const NOT_RUN_FILE_ENV = 'KUBEDIFF_TEST_NOT_RUN_FILE';

interface NotRun {
  /** The test file, relative to the working directory. */
  file: string;
  /** The names of the enclosing suites and of the test itself. */
  place: string[];
  kind: 'suite' | 'test';
  why: 'skip' | 'todo';
  reason: string;
}

/** Whether this run must run every test it selected (CI). */
export function requireAll(): boolean {
  return process.env[REQUIRE_ALL_ENV] === '1';
}

/** `2 suites and 3 tests skipped, 1 test todo`, or `none`. */
function notRunCount(entries: readonly NotRun[]): string {
  const parts: string[] = [];
  for (const why of ['skip', 'todo'] as const) {
    const of = entries.filter((entry) => entry.why === why);
    const suites = of.filter((entry) => entry.kind === 'suite').length;
    const tests = of.length - suites;
    const counted = [
      ...(suites > 0 ? [plural(suites, 'suite')] : []),
      ...(tests > 0 ? [plural(tests, 'test')] : []),
    ];
    if (counted.length > 0) parts.push(`${counted.join(' and ')} ${why === 'skip' ? 'skipped' : 'todo'}`);
  }
  return parts.length > 0 ? parts.join(', ') : 'none';
}

/** The lines printed before the closing summary (each one diagnostic of the spec reporter). */
function notRunLines(entries: readonly NotRun[], mustRunAll: boolean): { nesting: number; text: string }[] {
  const lines = [{ nesting: 0, text: `not run (skipped or todo): ${notRunCount(entries)}` }];
  for (const entry of entries) {
    const kind = entry.kind === 'suite' ? ' (suite)' : '';
    const why = entry.why === 'todo' ? 'todo: ' : '';
    lines.push({
      nesting: 1,
      text: `${entry.file} > ${entry.place.join(' > ')}${kind}: ${why}${entry.reason}`,
    });
  }
  if (mustRunAll && entries.length > 0) {
    lines.push({
      nesting: 0,
      text:
        `${REQUIRE_ALL_ENV}=1 requires every test to run, and this run has ${notRunCount(entries)} (listed above): run ` +
        'against the servers npm test starts itself (no USE_EXISTING_CLUSTER, KUBEDIFF_TEST_KAFKA_BROKERS or ' +
        'KUBEDIFF_TEST_POSTGRES_URL), or remove the skip or todo.',
    });
  }
  return lines;
}

function reasonOf(value: string | boolean | undefined): string {
  return typeof value === 'string' && value !== '' ? value : '(no reason given)';
}

/** Collects what was not run from the runner's events, following each file's suites by nesting. */
class NotRunCollector {
  readonly entries: NotRun[] = [];
  /** Per file, the name of the test or suite started at each nesting level. */
  readonly #open = new Map<string, string[]>();

  see(event: TestEvent): void {
    if (event.type === 'test:start') {
      const stack = this.#open.get(event.data.file ?? '') ?? [];
      stack.length = event.data.nesting;
      stack.push(event.data.name);
      this.#open.set(event.data.file ?? '', stack);
      return;
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') return;
    const { skip, todo, nesting, name, file, details } = event.data;
    if (skip === undefined && todo === undefined) return;
    const parents = (this.#open.get(file ?? '') ?? []).slice(0, nesting);
    this.entries.push({
      file: file ? path.relative(process.cwd(), file) : '(no file)',
      place: [...parents, name],
      kind: details.type === 'suite' ? 'suite' : 'test',
      why: skip !== undefined ? 'skip' : 'todo',
      reason: reasonOf(skip ?? todo),
    });
  }
}

/** The first line of the runner's closing summary: `tests N`, at the top level, of no file. */
function opensSummary(event: TestEvent): boolean {
  return (
    event.type === 'test:diagnostic' &&
    event.data.nesting === 0 &&
    !event.data.file &&
    /^tests \d+$/.test(event.data.message)
  );
}

/** The runner's events, with the list of what was not run inserted before the closing summary. */
async function* withNotRunReport(
  source: AsyncIterable<TestEvent>,
  options: { mustRunAll: boolean; notRunFile?: string | undefined },
): AsyncGenerator<TestEvent> {
  const collector = new NotRunCollector();
  let reported = false;
  const report = function* (): Generator<TestEvent> {
    reported = true;
    if (options.notRunFile) writeFileSync(options.notRunFile, `${JSON.stringify(collector.entries)}\n`);
    for (const line of notRunLines(collector.entries, options.mustRunAll)) {
      yield { type: 'test:diagnostic', data: { nesting: line.nesting, message: line.text } } as TestEvent;
    }
  };
  for await (const event of source) {
    collector.see(event);
    if (!reported && opensSummary(event)) yield* report();
    yield event;
  }
  // A run cut short ends without a summary: the list still comes, last.
  if (!reported) yield* report();
}

export default async function* reporter(
  source: AsyncIterable<TestEvent>,
): AsyncGenerator<string | Uint8Array> {
  const events = withNotRunReport(source, {
    mustRunAll: requireAll(),
    notRunFile: process.env[NOT_RUN_FILE_ENV],
  });
  yield* Readable.from(events).pipe(new spec());
}
