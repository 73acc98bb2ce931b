// The page of `kubediff ui` shows a field manager, a user, a path and a value from the cluster with their
// bidi and invisible characters as visible escapes (src/ui/web/visible-text.ts), in the events table and in
// the object's history, in a real browser: a U+202E in a manager cannot reverse the text after it.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { ChangeEvent } from '../../src/events/event.ts';
import { SqliteDatabase } from '../../src/state/sqlite-database.ts';
import { collectPageErrors, newPage, withBrowser } from '../helpers/browser.ts';
import { killAll, runKubediff } from '../helpers/cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubediff-ui-visible-'));
after(async () => {
  await killAll();
  rmSync(dir, { recursive: true, force: true });
});

test('bidi and invisible characters from the cluster are shown as escapes on the page', async () => {
  const state = join(dir, 'state.db');
  const event: ChangeEvent = {
    id: 'uid-web:2',
    type: 'UPDATED',
    time: new Date(Date.now() - 60_000).toISOString(),
    cluster: 'prod',
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace: 'shop',
      name: 'web',
      uid: 'uid-web',
      resourceVersion: '2',
    },
    by: {
      managers: [{ manager: 'deploy\u202egnp.exe', operation: 'Update' }],
      user: { username: 'al\u200bice' },
    },
    changes: [{ op: 'replace', path: '/data/k\u2066ey', from: 'a', to: 'b\u202ec' }],
  };
  const db = SqliteDatabase.open(state);
  db.write([{ kind: 'event', resource: 'configmaps', event }]);
  db.close();
  const ui = runKubediff(['ui', '--state', state, '--listen', '127.0.0.1:0'], { timeoutMs: 30_000 });
  const origin = (await ui.waitForStderr(/serving the change history on (http:\/\/[^/\s]+)\//))[1]!;
  await withBrowser(async (browser) => {
    const page = await newPage(browser);
    const errors = collectPageErrors(page);
    await page.goto(`${origin}/`);
    const row = page.locator('#events tbody tr').first();
    await row.waitFor();
    // The row's By cell names the user; the manager is in its title (hover, focus).
    assert.match((await row.textContent()) ?? '', /al\\u200bice$/);
    assert.equal(await row.locator('td').nth(4).getAttribute('title'), 'al\\u200bice (deploy\\u202egnp.exe)');
    await row.locator('button').click();
    const history = page.locator('#object-events');
    await history.filter({ hasText: 'data/k' }).waitFor();
    const text = (await history.textContent()) ?? '';
    assert.match(text, /\/data\/k\\u2066ey: "a" → "b\\u202ec"/);
    assert.match(text, /by al\\u200bice \(deploy\\u202egnp\.exe\)/);
    const body = (await page.locator('body').textContent()) ?? '';
    assert.doesNotMatch(body, /[\u202e\u200b\u2066]/u, 'no bidi or invisible character as itself');
    assert.deepEqual(errors, []);
  });
  assert.equal((await ui.stop('SIGTERM')).code, 0);
});
