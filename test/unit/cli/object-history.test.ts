// `show`, `diff` and `blame` below the command line: the points in time they take, the versions rebuilt
// from a history of real diffs (src/diff/diff.ts), what they say when the history does not reach, the
// YAML and its line keys, the unified diff, and blame's attribution of each line (by merge key, line by
// line inside a multi-line string, user before manager).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { stripVTControlCharacters } from 'node:util';
import { parse } from 'yaml';
import { runBlame } from '../../../src/cli/object-history/blame.ts';
import { blameLines } from '../../../src/cli/object-history/blame-lines.ts';
import { runDiff } from '../../../src/cli/object-history/object-diff.ts';
import {
  HistoryReach,
  ObjectTimeline,
  type RecordedEvent,
} from '../../../src/cli/object-history/object-timeline.ts';
import { runShow } from '../../../src/cli/object-history/show.ts';
import { parseTimePoint } from '../../../src/cli/object-history/time-point.ts';
import type { CommandIo } from '../../../src/cli/object-history/version-notes.ts';
import { diffObjects } from '../../../src/diff/diff.ts';
import { objectYaml, yamlLines } from '../../../src/diff/object-yaml.ts';
import { unifiedDiff } from '../../../src/diff/unified-diff.ts';
import type { ByInfo, ChangeEvent } from '../../../src/events/event.ts';
import type { JsonObject } from '../../../src/kube/types.ts';
import { SqliteDatabase } from '../../../src/state/sqlite-database.ts';
import { UsageError } from '../../../src/util/errors.ts';

const NOW = Date.parse('2026-11-27T12:00:00Z');
const T0 = Date.parse('2026-11-27T10:00:00Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();
const REF = { resource: 'deployments.apps', namespace: 'shop', name: 'web' };

function deployment(
  replicas: number,
  image: string,
  env: Record<string, string>,
  labels: Record<string, string>,
) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop', uid: 'u1', labels },
    spec: {
      replicas,
      template: {
        spec: {
          containers: [
            { name: 'web', image, env: Object.entries(env).map(([name, value]) => ({ name, value })) },
            { name: 'sidecar', image: 'proxy:1' },
          ],
        },
      },
    },
  } as JsonObject;
}

/** A history of `versions` (the first ADDED unless `baseline`), one event per minute, with real diffs. */
function history(
  versions: JsonObject[],
  by: (ByInfo | undefined)[],
  options: { baseline?: boolean; uid?: string } = {},
): { events: RecordedEvent[]; current: JsonObject } {
  const events: RecordedEvent[] = [];
  versions.forEach((version, index) => {
    if (index === 0 && options.baseline) return;
    const type = index === 0 ? 'ADDED' : 'UPDATED';
    const event: RecordedEvent = {
      seq: index + 1,
      id: `${options.uid ?? 'u1'}:${100 + index}`,
      type,
      time: at(index + 1),
      object: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        resource: 'deployments',
        namespace: 'shop',
        name: 'web',
        uid: options.uid ?? 'u1',
        resourceVersion: String(100 + index),
      },
      ...(by[index] ? { by: by[index] } : {}),
    };
    if (type === 'UPDATED') event.changes = diffObjects(versions[index - 1]!, version);
    events.push(event);
  });
  return { events, current: versions.at(-1)! };
}

const V = [
  deployment(1, 'web:1', { MODE: 'a' }, { app: 'web' }),
  deployment(3, 'web:1', { MODE: 'a' }, { app: 'web' }),
  deployment(3, 'web:2', { MODE: 'a' }, { app: 'web' }),
  deployment(3, 'web:2', { MODE: 'b', DEBUG: '1' }, { app: 'web' }),
  deployment(3, 'web:2', { MODE: 'b', DEBUG: '1' }, { app: 'web', tier: 'front' }),
];
const BY: ByInfo[] = [
  { managers: [{ manager: 'kubectl-create', operation: 'Update' }], user: { username: 'alice' } },
  { managers: [{ manager: 'kubectl', operation: 'Update', subresource: 'scale' }] },
  { managers: [{ manager: 'kubectl-set', operation: 'Update' }], user: { username: 'bob' } },
  { managers: [{ manager: 'release-bot', operation: 'Update' }] },
  { managers: [{ manager: 'kubectl-label', operation: 'Update' }], user: { username: 'carol' } },
];

function timeline(options: { baseline?: boolean; start?: string } = {}) {
  const { events, current } = history(V, BY, options);
  return ObjectTimeline.of(REF, { events, truncated: false, current }, options.start ?? at(0));
}

describe('points in time', () => {
  it('reads times, durations ago, now and event ids; refuses anything else in one sentence', () => {
    assert.deepEqual(parseTimePoint('--at', '2h', NOW), { kind: 'time', ms: NOW - 7_200_000 });
    assert.deepEqual(parseTimePoint('--at', '1h30m ago', NOW), { kind: 'time', ms: NOW - 5_400_000 });
    assert.deepEqual(parseTimePoint('--at', 'now', NOW), { kind: 'time', ms: NOW });
    assert.deepEqual(parseTimePoint('--at', '2026-11-27T10:05:00Z', NOW), { kind: 'time', ms: T0 + 300_000 });
    const clock = parseTimePoint('--at', '09:30', NOW);
    assert.equal(clock.kind, 'time');
    assert.equal(new Date((clock as { ms: number }).ms).getHours(), 9);
    assert.deepEqual(parseTimePoint('--from', '6f1c2e4a-0b7a-4c1e-9d3f-1a2b3c4d5e6f:48213', NOW), {
      kind: 'event',
      id: '6f1c2e4a-0b7a-4c1e-9d3f-1a2b3c4d5e6f:48213',
    });
    assert.throws(
      () => parseTimePoint('--at', 'yesterday', NOW),
      (error: unknown) =>
        error instanceof UsageError && /^invalid --at "yesterday": expected a time .*\.$/.test(error.message),
    );
    assert.throws(() => parseTimePoint('--at', '25:00', NOW), UsageError);
  });

  it('reads a time without a zone as local time, a date alone as its local midnight', () => {
    const zone = process.env.TZ;
    // Node reads TZ again when it is set: a zone half an hour off UTC, east, and one west.
    try {
      process.env.TZ = 'Asia/Kolkata';
      assert.deepEqual(parseTimePoint('--at', '2026-11-27', NOW), {
        kind: 'time',
        ms: Date.parse('2026-11-26T18:30:00Z'),
      });
      assert.deepEqual(parseTimePoint('--at', '2026-11-27 13:50', NOW), {
        kind: 'time',
        ms: Date.parse('2026-11-27T08:20:00Z'),
      });
      process.env.TZ = 'America/New_York';
      assert.deepEqual(parseTimePoint('--at', '2026-11-27', NOW), {
        kind: 'time',
        ms: Date.parse('2026-11-27T05:00:00Z'),
      });
      assert.deepEqual(parseTimePoint('--at', '2026-11-27T13:50:00+01:00', NOW), {
        kind: 'time',
        ms: Date.parse('2026-11-27T12:50:00Z'),
      });
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });
});

describe('versions at a point', () => {
  it('is the version after the last event at or before the point', () => {
    const history = timeline();
    assert.deepEqual(history.versionAt({ kind: 'time', ms: Date.parse(at(2)) }).object, V[1]);
    assert.deepEqual(history.versionAt({ kind: 'time', ms: Date.parse(at(3)) + 30_000 }).object, V[2]);
    assert.deepEqual(history.versionAt({ kind: 'event', id: 'u1:103' }).object, V[3]);
    assert.deepEqual(history.latestVersion().object, V[4]);
    assert.deepEqual(history.oldestVersion().object, V[0]);
    const between = history.eventsBetween(
      history.versionAt({ kind: 'event', id: 'u1:101' }),
      history.versionAt({ kind: 'event', id: 'u1:103' }),
    );
    assert.deepEqual(
      between.map((event) => event.id),
      ['u1:102', 'u1:103'],
    );
  });

  it('before the creation, the object did not exist; before the history, it says how far it reaches', () => {
    const history = timeline({ start: at(0.5) });
    const before = history.versionAt({ kind: 'time', ms: Date.parse(at(0.75)) });
    assert.equal(before.object, undefined);
    assert.throws(
      () => history.versionAt({ kind: 'time', ms: Date.parse(at(0)) }),
      (error: unknown) =>
        error instanceof HistoryReach &&
        error.message ===
          `${at(0)} is before the history's start: it reaches back to ${at(0.5)}, so nothing older is known of deployments.apps shop/web.`,
    );
    assert.throws(() => history.versionAt({ kind: 'event', id: 'u9:1' }), UsageError);
  });

  it('without the creation in the history, the state before the oldest change holds since its start', () => {
    const history = timeline({ baseline: true });
    const base = history.versionAt({ kind: 'time', ms: Date.parse(at(1.5)) });
    assert.deepEqual(base.object, V[0]);
    assert.equal(base.event, undefined);
    assert.equal(base.since, at(0));
    assert.deepEqual(history.oldestVersion().object, V[0]);
  });

  it('a deleted object: its versions are not kept, and it says so', () => {
    const { events } = history(V.slice(0, 2), BY);
    events.push({ ...events[1]!, seq: 9, id: 'u1:109', type: 'DELETED', time: at(5) });
    delete events[2]!.changes;
    const deleted = ObjectTimeline.of(REF, { events, truncated: false }, at(0));
    assert.equal(deleted.versionAt({ kind: 'time', ms: Date.parse(at(6)) }).object, undefined);
    assert.throws(
      () => deleted.versionAt({ kind: 'time', ms: Date.parse(at(2)) }),
      (error: unknown) =>
        error instanceof HistoryReach && /was deleted at .*cannot be rebuilt/.test(error.message),
    );
  });
});

describe('YAML', () => {
  it('is kubectl-like: keys sorted, list items at their key, no folding, multi-line strings as blocks', () => {
    const text = objectYaml({
      kind: 'ConfigMap',
      apiVersion: 'v1',
      data: { 'app.conf': 'a = 1\nb = 2\n', long: 'x'.repeat(200) },
      list: [{ b: 1, a: 2 }],
    });
    assert.equal(
      text,
      `apiVersion: v1\ndata:\n  app.conf: |\n    a = 1\n    b = 2\n  long: ${'x'.repeat(200)}\nkind: ConfigMap\nlist:\n- a: 2\n  b: 1\n`,
    );
  });

  it('keys list items by their merge key, so the same line keeps its key when an item is inserted', () => {
    const keyOf = (object: JsonObject, text: string) =>
      yamlLines(object).find((line) => line.text.includes(text))?.key;
    const inserted = structuredClone(V[0]!) as JsonObject;
    (inserted.spec as { template: { spec: { containers: unknown[] } } }).template.spec.containers.unshift({
      name: 'init',
      image: 'busybox',
    });
    assert.equal(keyOf(V[0]!, 'proxy:1'), keyOf(inserted, 'proxy:1'));
    assert.match(keyOf(V[0]!, 'proxy:1') ?? '', /\[name=sidecar\]/);
  });
});

describe('unified diff', () => {
  it('writes --- +++ and @@ hunks with context, and nothing for equal texts', () => {
    const a = { label: 'cm', header: 'then', text: 'a: 1\nb: 2\nc: 3\n' };
    const b = { label: 'cm', header: 'now', text: 'a: 1\nb: 5\nc: 3\n' };
    assert.deepEqual(unifiedDiff(a, b, { color: false, terminal: false }), [
      '--- cm\tthen',
      '+++ cm\tnow',
      '@@ -1,3 +1,3 @@',
      ' a: 1',
      '-b: 2',
      '+b: 5',
      ' c: 3',
    ]);
    assert.deepEqual(unifiedDiff(a, a, { color: false, terminal: false }), []);
    assert.deepEqual(
      unifiedDiff({ label: 'cm', header: 'none', text: undefined }, b, {
        color: false,
        terminal: false,
      }).slice(0, 3),
      ['--- /dev/null\tnone', '+++ cm\tnow', '@@ -0,0 +1,3 @@'],
    );
  });
});

describe('blame', () => {
  it('gives each line to the event that last changed it: the user when known, else the manager', () => {
    const history = timeline();
    const { versions, complete } = history.versionsUpTo(history.latestVersion(), 100);
    assert.equal(complete, true);
    const lines = blameLines(versions, complete);
    const who = (text: string) => {
      const line = lines.find((candidate) => candidate.text.trim() === text);
      assert.ok(line, `no line ${text}`);
      return `${line.origin?.user ?? line.origin?.manager}@${line.origin?.time}`;
    };
    assert.equal(who('replicas: 3'), `kubectl@${at(2)}`);
    assert.equal(who('- env:'), `alice@${at(1)}`);
    assert.equal(who('image: web:2'), `bob@${at(3)}`);
    assert.equal(who('value: b'), `release-bot@${at(4)}`);
    assert.equal(who('- name: DEBUG'), `release-bot@${at(4)}`);
    assert.equal(who('tier: front'), `carol@${at(5)}`);
    assert.equal(who('app: web'), `alice@${at(1)}`);
    // The sidecar's lines: unchanged since the creation, whatever happened to the container before it.
    assert.equal(who('- image: proxy:1'), `alice@${at(1)}`);
  });

  it('at an earlier point, blames that version; lines older than the history are left open', () => {
    const history = timeline({ baseline: true });
    const version = history.versionAt({ kind: 'event', id: 'u1:102' });
    const { versions, complete } = history.versionsUpTo(version, 100);
    assert.equal(complete, false);
    const lines = blameLines(versions, complete);
    const line = (text: string) => lines.find((candidate) => candidate.text.trim() === text);
    assert.equal(line('image: web:2')?.origin?.user, 'bob');
    assert.equal(line('replicas: 3')?.origin?.manager, 'kubectl');
    assert.equal(line('app: web')?.origin, undefined);
  });

  it("keeps a list item's first line with its field when a field sorted before it is added", () => {
    const pod = (image: string, env?: { name: string; value: string }[]) =>
      ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web', uid: 'u1' },
        spec: { containers: [{ name: 'web', image, ...(env ? { env } : {}) }] },
      }) as JsonObject;
    const versions = [pod('web:1'), pod('web:2'), pod('web:2', [{ name: 'MODE', value: 'a' }])];
    const { events, current } = history(versions, [
      { user: { username: 'alice' } },
      { user: { username: 'bob' } },
      { user: { username: 'carol' } },
    ]);
    const pods = ObjectTimeline.of(REF, { events, truncated: false, current }, at(0));
    const { versions: read, complete } = pods.versionsUpTo(pods.latestVersion(), 10);
    const lines = blameLines(read, complete);
    const user = (text: string) => lines.find((line) => line.text.trim() === text)?.origin?.user;
    // `- image: web:2` became `image: web:2` when env (sorted first) was added: still bob's line.
    assert.deepEqual(['- env:', 'image: web:2', 'name: web'].map(user), ['carol', 'bob', 'alice']);
  });

  it('follows the lines of a multi-line string one by one', () => {
    const config = (text: string) =>
      ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'web', uid: 'u1' },
        data: { 'app.conf': text },
      }) as JsonObject;
    const versions = [
      config('a = 1\nb = 2\nc = 3\n'),
      config('a = 1\nb = 20\nc = 3\n'),
      config('z = 0\na = 1\nb = 20\nc = 3\n'),
    ];
    const { events, current } = history(versions, [
      { user: { username: 'alice' } },
      { user: { username: 'bob' } },
      { user: { username: 'carol' } },
    ]);
    const history3 = ObjectTimeline.of(REF, { events, truncated: false, current }, at(0));
    const { versions: read, complete } = history3.versionsUpTo(history3.latestVersion(), 10);
    const lines = blameLines(read, complete);
    const user = (text: string) => lines.find((line) => line.text.trim() === text)?.origin?.user;
    assert.deepEqual(['z = 0', 'a = 1', 'b = 20', 'c = 3'].map(user), ['carol', 'alice', 'bob', 'alice']);
  });
});

describe('the commands on a state file, in process', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubediff-object-history-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'state.db');
  const config = (mode: string) =>
    ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'flags', namespace: 'shop', uid: 'c1' },
      data: { mode },
    }) as JsonObject;
  const versions = [config('plain'), config('\u202eevil\u001b[31m')];
  const configMap = (name: string, uid: string, data: Record<string, string>) =>
    ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'shop', uid }, data }) as JsonObject;
  /** ADDED then UPDATED (real diffs), one a minute, then DELETED when `deleted`. */
  const configMapEvents = (objects: JsonObject[], uid: string, deleted: boolean) => {
    const name = (objects[0]!.metadata as JsonObject).name as string;
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespace: 'shop', name, uid };
    const events: ChangeEvent[] = objects.map((object, index) => ({
      id: `${uid}:${100 + index}`,
      type: index === 0 ? 'ADDED' : 'UPDATED',
      time: at(index + 1),
      object: { ...ref, resourceVersion: String(100 + index) },
      ...(index > 0 ? { changes: diffObjects(objects[index - 1]!, object) } : {}),
    }));
    if (deleted) {
      events.push({
        id: `${uid}:${100 + objects.length}`,
        type: 'DELETED',
        time: at(objects.length + 1),
        object: { ...ref, resourceVersion: String(100 + objects.length) },
      });
    }
    return events.map((event) => ({ kind: 'event' as const, resource: 'configmaps', event }));
  };

  before(() => {
    const db = SqliteDatabase.open(file);
    const { events } = history(versions, [{ user: { username: 'alice' } }, { user: { username: 'bob' } }]);
    // `gone`: created, changed, deleted (no last state kept); `huge`: a last state beyond the 16 MiB one read holds.
    const gone = [configMap('gone', 'g1', { mode: 'a' }), configMap('gone', 'g1', { mode: 'b' })];
    const huge = [
      configMap('huge', 'h1', { blob: 'x'.repeat(17 * 2 ** 20), mode: 'a' }),
      configMap('huge', 'h1', { blob: 'x'.repeat(17 * 2 ** 20), mode: 'b' }),
    ];
    db.write([
      ...configMapEvents(gone, 'g1', true),
      ...configMapEvents(huge, 'h1', false),
      {
        kind: 'object',
        resource: 'configmaps',
        object: {
          key: 'shop/huge',
          namespace: 'shop',
          name: 'huge',
          uid: 'h1',
          resourceVersion: '101',
          object: huge[1]!,
        },
      },
      ...events.map((event) => {
        const { seq: _seq, ...recorded } = event;
        const configMap: ChangeEvent = {
          ...recorded,
          id: event.id.replace('u1', 'c1'),
          object: {
            ...recorded.object,
            apiVersion: 'v1',
            kind: 'ConfigMap',
            resource: 'configmaps',
            name: 'flags',
            uid: 'c1',
          },
        };
        return { kind: 'event' as const, resource: 'configmaps', event: configMap };
      }),
      {
        kind: 'object',
        resource: 'configmaps',
        object: {
          key: 'shop/flags',
          namespace: 'shop',
          name: 'flags',
          uid: 'c1',
          resourceVersion: '101',
          object: versions[1]!,
        },
      },
    ]);
    const configmaps = {
      group: '',
      version: 'v1',
      resource: 'configmaps',
      kind: 'ConfigMap',
      namespaced: true,
      verbs: ['list', 'watch'],
      shortNames: ['cm'],
      singularName: 'configmap',
      categories: [],
    };
    db.writeSerialized([
      {
        kind: 'resources',
        entries: [{ resource: 'configmaps', json: JSON.stringify(configmaps), watched: true }],
      },
    ]);
    db.close();
  });

  const capture = async (isTTY: boolean, run: (io: CommandIo) => Promise<unknown>) => {
    let stdout = '';
    let stderr = '';
    const sink = (write: (text: string) => void) =>
      new Writable({
        write: (chunk, _encoding, done) => {
          write(String(chunk));
          done();
        },
      });
    await run({
      stdout: sink((text) => (stdout += text)),
      stderr: sink((text) => (stderr += text)),
      isTTY,
      now: () => NOW,
    });
    return { stdout, stderr };
  };

  it('on a terminal, escapes what would act on it; piped, writes the YAML as it is', async () => {
    const terminal = await capture(true, (io) => runShow('cm/flags', { state: file, namespace: 'shop' }, io));
    const raw = (text: string) => text.includes('\u202e') || text.includes('evil\u001b');
    assert.match(terminal.stdout, /^ {2}mode: .*\\u202e/m);
    assert.ok(!raw(terminal.stdout), terminal.stdout);
    const piped = await capture(false, (io) => runShow('cm/flags', { state: file, namespace: 'shop' }, io));
    assert.deepEqual(parse(piped.stdout).data, { mode: '\u202eevil\u001b[31m' });
    const blame = await capture(true, (io) =>
      runBlame('configmaps/flags', { state: file, namespace: 'shop', offline: true }, io),
    );
    assert.ok(!raw(blame.stdout), blame.stdout);
    assert.match(blame.stdout, /bob +.*mode/);
    // Printed times are UTC and say so (the times the commands take without a zone are local).
    assert.match(stripVTControlCharacters(blame.stdout), /^ 2026-11-27 10:02:00Z +bob +.*mode/m);
    let different = false;
    const diff = await capture(true, async (io) => {
      different = await runDiff('cm/flags', { state: file, namespace: 'shop' }, io);
    });
    assert.equal(different, true);
    assert.ok(!raw(diff.stdout), diff.stdout);
  });

  it('diff on a deleted object lists its changes and says why its versions are not shown (exit 1)', async () => {
    let different = false;
    const diff = await capture(false, async (io) => {
      different = await runDiff('cm/gone', { state: file, namespace: 'shop' }, io);
    });
    assert.equal(different, true);
    assert.match(diff.stdout, /^# configmaps shop\/gone: 3 changes$/m);
    assert.match(diff.stdout, / UPDATED /);
    assert.match(diff.stdout, / DELETED /);
    assert.match(
      diff.stdout,
      /^# configmaps shop\/gone \(uid g1\) was deleted at .*\(its changes are listed above\)\.$/m,
    );
    const windowed = await capture(false, async (io) => {
      different = await runDiff('cm/gone', { state: file, namespace: 'shop', from: at(1.5) }, io);
    });
    assert.match(windowed.stdout, /^# configmaps shop\/gone: 2 changes$/m);
  });

  it('a window diff lists the changes of an object too large to rebuild and still diffs the others', async () => {
    let different = false;
    const diff = await capture(false, async (io) => {
      different = await runDiff(undefined, { state: file, namespace: 'shop', since: '1h59m' }, io);
    });
    assert.equal(different, true);
    assert.equal(diff.stderr, '');
    assert.match(diff.stdout, /^# configmaps shop\/huge: 2 changes$/m);
    assert.match(diff.stdout, /^10:02:00Z UPDATED configmaps shop\/huge\n {2}~ data\.mode: "a" → "b"$/m);
    assert.match(
      diff.stdout,
      /^# configmaps shop\/huge is larger than 16 MiB as recorded.*\(its changes are listed above\)\.$/m,
    );
    assert.match(diff.stdout, /^# configmaps shop\/flags: 1 change from /m);
    assert.match(diff.stdout, /^\+ {2}mode: /m);
  });
});
