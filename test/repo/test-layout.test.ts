// The tests are laid out like the code (CONTRIBUTING.md, "Tests"): test/unit/<layer>/ holds the unit
// tests of src/<layer>/ (and test/unit/<layer>/<folder>/ those of src/<layer>/<folder>/) (test/unit/helpers/ those of the test helpers, and a test across every layer sits
// in test/unit/ itself), test/repo/ the checks of the repository (lint rules, docs, packaging), and
// test/integration/ what runs against real servers. A unit test needs no server: `npm test -- test/unit`
// starts none, so none of them may reach the modules through which a test gets one.
import assert from 'node:assert/strict';
import { existsSync, globSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { LAYERS } from '../../scripts/layers.ts';
import { serverNeeds } from '../../scripts/test-needs.ts';
import { nonEmpty } from '../helpers/non-empty.ts';

const repo = path.resolve(import.meta.dirname, '../..');
const folders = (dir: string) =>
  readdirSync(path.join(repo, dir)).filter((name) => statSync(path.join(repo, dir, name)).isDirectory());

test('test/unit mirrors the folders of src/', () => {
  const allowed = new Set<string>([...LAYERS, 'helpers']);
  assert.deepEqual(
    folders('test/unit').filter((name) => !allowed.has(name)),
    [],
    'a folder of test/unit that is no layer of src/ (scripts/layers.ts) nor helpers',
  );
  // Below a layer, a folder of tests is a folder of that layer's code (test/unit/sinks/file/ for src/sinks/file/).
  const unmirrored = (dir: string): string[] =>
    folders(dir).flatMap((name) => {
      const sub = `${dir}/${name}`;
      const code = path.join(repo, 'src', path.relative('test/unit', sub));
      return existsSync(code) && statSync(code).isDirectory() ? unmirrored(sub) : [sub];
    });
  for (const layer of nonEmpty(folders('test/unit'), 'folders of test/unit')) {
    assert.deepEqual(
      unmirrored(`test/unit/${layer}`),
      [],
      `test/unit/${layer} has folders src/${layer} has not`,
    );
  }
  assert.deepEqual(
    globSync('test/**/*.test.ts', { cwd: repo }).filter(
      (file) => !/^test\/(unit|repo|integration)\//.test(file.split(path.sep).join('/')),
    ),
    [],
    'a test file outside test/unit, test/repo and test/integration',
  );
});

test('no unit test or repository check needs a server', () => {
  const needs = serverNeeds(['test/unit/**/*.test.ts', 'test/repo/**/*.test.ts']);
  assert.deepEqual(
    Object.entries(needs).filter(([, needed]) => needed),
    [],
    'a file under test/unit or test/repo reaches a server (test/helpers/*-env.ts): it belongs in test/integration',
  );
});

test('the check can fail: an integration test reaches servers', () => {
  const needs = serverNeeds(['test/integration/state-postgres.test.ts']);
  assert.equal(needs.postgres, true);
});
