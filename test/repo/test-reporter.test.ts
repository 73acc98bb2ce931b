// npm test's reporter (scripts/test-reporter.ts) under the real test runner: node's spec output as it
// prints it, and before its closing summary every skipped or todo test and suite, with its reason; with
// KUBEDIFF_TEST_REQUIRE_ALL=1 one sentence more, and the list in KUBEDIFF_TEST_NOT_RUN_FILE (which
// scripts/run-tests.ts reads for its exit code).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { stripVTControlCharacters } from 'node:util';

const reporter = path.resolve(import.meta.dirname, '../../scripts/test-reporter.ts');
const dir = mkdtempSync(path.join(tmpdir(), 'kubediff-test-reporter-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const SKIPPING = `
import { describe, test } from 'node:test';
test('runs', () => {});
test('needs etcd', { skip: 'needs direct etcd access' }, () => {});
describe('audit', { skip: 'needs the shared etcd' }, () => { test('inside', () => {}); });
describe('outer', () => {
  describe('inner', () => { test('deep', { skip: true }, () => {}); });
  test('later', { todo: 'not written yet' }, () => {});
  test('at run time', (t) => { t.skip('no old Node here'); });
});
`;
const SUMMARY_KEYS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo', 'duration_ms'];

function runTests(source: string, env: Record<string, string> = {}) {
  const file = path.join(dir, 'fixture.test.mjs');
  writeFileSync(file, source);
  const notRunFile = path.join(dir, 'not-run.json');
  rmSync(notRunFile, { force: true });
  // A runner of its own, not a child of this test file's (which NODE_TEST_CONTEXT would make it).
  const { NODE_TEST_CONTEXT: _, ...parentEnv } = process.env;
  const result = spawnSync(
    process.execPath,
    ['--test', `--test-reporter=${reporter}`, '--test-reporter-destination=stdout', 'fixture.test.mjs'],
    {
      cwd: dir,
      encoding: 'utf8',
      env: { ...parentEnv, KUBEDIFF_TEST_NOT_RUN_FILE: notRunFile, KUBEDIFF_TEST_REQUIRE_ALL: '', ...env },
    },
  );
  const lines = stripVTControlCharacters(result.stdout).trimEnd().split('\n');
  const summary = lines.findIndex((line) => /^ℹ tests \d+$/.test(line));
  assert.ok(summary > 0, result.stdout + result.stderr);
  return {
    code: result.status,
    lines,
    /** The lines between the last test's and the closing summary. */
    report: lines.slice(
      lines.findIndex((line) => line.startsWith('ℹ not run')),
      summary,
    ),
    summaryKeys: lines.slice(summary).map((line) => /^ℹ (\w+) /.exec(line)?.[1]),
    notRun: JSON.parse(readFileSync(notRunFile, 'utf8')) as unknown,
  };
}

test('lists every skipped and todo test and suite with its reason, before the closing summary', () => {
  const run = runTests(SKIPPING);
  assert.equal(run.code, 0);
  assert.deepEqual(run.report, [
    'ℹ not run (skipped or todo): 1 suite and 3 tests skipped, 1 test todo',
    '  ℹ fixture.test.mjs > needs etcd: needs direct etcd access',
    '  ℹ fixture.test.mjs > audit (suite): needs the shared etcd',
    '  ℹ fixture.test.mjs > outer > inner > deep: (no reason given)',
    '  ℹ fixture.test.mjs > outer > later: todo: not written yet',
    '  ℹ fixture.test.mjs > outer > at run time: no old Node here',
  ]);
  // The runner's own summary comes last, whole and unchanged: CI reads it.
  assert.deepEqual(run.summaryKeys, SUMMARY_KEYS);
  assert.ok(run.lines.includes('ℹ skipped 3'), run.lines.join('\n'));
  assert.deepEqual(run.notRun, [
    {
      file: 'fixture.test.mjs',
      place: ['needs etcd'],
      kind: 'test',
      why: 'skip',
      reason: 'needs direct etcd access',
    },
    {
      file: 'fixture.test.mjs',
      place: ['audit'],
      kind: 'suite',
      why: 'skip',
      reason: 'needs the shared etcd',
    },
    {
      file: 'fixture.test.mjs',
      place: ['outer', 'inner', 'deep'],
      kind: 'test',
      why: 'skip',
      reason: '(no reason given)',
    },
    {
      file: 'fixture.test.mjs',
      place: ['outer', 'later'],
      kind: 'test',
      why: 'todo',
      reason: 'not written yet',
    },
    {
      file: 'fixture.test.mjs',
      place: ['outer', 'at run time'],
      kind: 'test',
      why: 'skip',
      reason: 'no old Node here',
    },
  ]);
});

test('with KUBEDIFF_TEST_REQUIRE_ALL=1, one sentence says the run was not whole', () => {
  const run = runTests(SKIPPING, { KUBEDIFF_TEST_REQUIRE_ALL: '1' });
  assert.equal(
    run.report.at(-1),
    'ℹ KUBEDIFF_TEST_REQUIRE_ALL=1 requires every test to run, and this run has 1 suite and 3 tests skipped, ' +
      '1 test todo (listed above): run against the servers npm test starts itself (no USE_EXISTING_CLUSTER, ' +
      'KUBEDIFF_TEST_KAFKA_BROKERS or KUBEDIFF_TEST_POSTGRES_URL), or remove the skip or todo.',
  );
  assert.deepEqual(run.summaryKeys, SUMMARY_KEYS);
});

test('a whole run says so in one line, and lists nothing', () => {
  const run = runTests(`import { test } from 'node:test';\ntest('runs', () => {});\n`, {
    KUBEDIFF_TEST_REQUIRE_ALL: '1',
  });
  assert.equal(run.code, 0);
  assert.deepEqual(run.report, ['ℹ not run (skipped or todo): none']);
  assert.deepEqual(run.notRun, []);
  assert.deepEqual(run.summaryKeys, SUMMARY_KEYS);
});
