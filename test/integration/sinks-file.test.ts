// The file sink as users run it: `kubediff watch` against the real API server with a `type: file` entry
// of a small maxSize, so that it rotates many times during a burst of changes. After SIGTERM, the rotated
// files (gzipped) and the live file hold exactly the lines stdout printed (`-o json`): every change once,
// in order, the same text; the files are 0600. A path kubediff must not write (a symbolic link, a file
// where its directory should be, a file another file sink or a dead-letter file writes) is refused at start,
// exit code 2, in one sentence.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, realpath, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runKubediff, runKubediffToCompletion, WATCHING, watchArgs } from '../helpers/cli.ts';
import { readFileSinkLines } from '../helpers/file-sink-files.ts';
import { adminClient, type KubeAdmin, waitFor } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { nonEmpty } from '../helpers/non-empty.ts';

let admin: KubeAdmin;
const namespaces: string[] = [];

before(() => {
  admin = adminClient();
});

after(async () => {
  await Promise.all(namespaces.map((ns) => admin.deleteNamespace(ns)));
  await admin.close();
});

describe('file sink', () => {
  it('rotates under a burst of changes: the gzipped and live files hold every stdout line once, in order', async () => {
    const ns = await admin.createNamespace('sinks-file');
    namespaces.push(ns);
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-sinks-file-'));
    const file = path.join(dir, 'out', 'events.jsonl');
    const config = path.join(dir, 'kubediff.yaml');
    await writeFile(
      config,
      [
        'sinks:',
        '  - type: stdout',
        '    format: json',
        '  - type: file',
        `    path: ${file}`,
        '    maxSize: 4KB',
        '    maxFiles: 1000',
        '    fsync: every-event',
        '',
      ].join('\n'),
    );
    const kd = runKubediff([...watchArgs(ns, ['configmaps']), '-c', config, '--listen', '127.0.0.1:0'], {
      timeoutMs: 60_000,
    });
    const [, base] = await kd.waitForStderr(SERVING);
    await kd.waitForStderr(WATCHING);
    const configmaps = `/api/v1/namespaces/${ns}/configmaps`;
    await admin.create(configmaps, { metadata: { name: 'burst' }, data: { n: '0', pad: 'x'.repeat(600) } });
    const updates = 40;
    for (let n = 1; n <= updates; n++) await admin.patch(`${configmaps}/burst`, { data: { n: String(n) } });
    await kd.waitForEvent(
      (event) => event.changes?.some((change) => change.to === String(updates)) ?? false,
      {
        description: `the update to n=${updates}`,
      },
    );
    // Once the file sink has written all it accepted, its metrics count each rotation the folder shows.
    const sink = `file ${file}`;
    const metrics = await waitFor(
      async () => {
        const scraped = await scrapeMetrics(base as string);
        const accepted = scraped.get(`kubediff_sink_events_total{sink="${sink}",outcome="accepted"}`) ?? 0;
        const delivered = scraped.get(`kubediff_sink_events_total{sink="${sink}",outcome="delivered"}`) ?? -1;
        return accepted > updates && delivered === accepted ? scraped : undefined;
      },
      { what: 'the file sink to deliver every event it accepted' },
    );
    // A rotated file being compressed shows as itself and its .gz.tmp, then .gz, for a moment: count names once.
    const rotatedSoFar = new Set(
      (await readdir(path.dirname(file)))
        .filter((name) => name !== 'events.jsonl')
        .map((name) => name.replace(/\.gz(\.tmp)?$/, '')),
    );
    assert.equal(metrics.get(`kubediff_file_sink_rotations_total{sink="${sink}"}`), rotatedSoFar.size);
    assert.equal(metrics.get(`kubediff_file_sink_deleted_files_total{sink="${sink}"}`), 0);
    assert.ok(
      (metrics.get(`kubediff_file_sink_bytes{sink="${sink}"}`) ?? 0) >= (await stat(file)).size,
      'the bytes on disk count at least the live file',
    );
    const result = await kd.stop('SIGTERM');
    assert.equal(result.code, 0, result.stderr);

    const printed = kd.stdoutLines.filter((line) => line.startsWith('{'));
    nonEmpty(printed, 'events printed on stdout');
    const written = await readFileSinkLines(file);
    assert.deepEqual(written, printed, 'the file sink holds exactly what stdout printed, in the same order');
    const changes = written.map((line) => JSON.parse(line) as { type: string; changes?: { to?: unknown }[] });
    assert.deepEqual(
      changes.filter((e) => e.type === 'UPDATED').map((e) => e.changes?.[0]?.to),
      Array.from({ length: updates }, (_, n) => String(n + 1)),
      'every update once, in order',
    );

    const names = await readdir(path.dirname(file));
    const rotated = names.filter((name) => name !== 'events.jsonl');
    assert.ok(rotated.length >= 5, `rotated several times: ${names.join(', ')}`);
    assert.ok(
      rotated.every((name) => name.endsWith('.gz')),
      `every rotated file compressed by the time kubediff exited: ${names.join(', ')}`,
    );
    for (const name of names) {
      assert.equal((await stat(path.join(path.dirname(file), name))).mode & 0o777, 0o600, name);
    }
  });

  it('refuses a path it must not write, exit code 2, in one sentence', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-sinks-file-bad-'));
    const target = path.join(dir, 'target');
    await writeFile(target, '');
    await symlink(target, path.join(dir, 'link.jsonl'));
    const shared = path.join(dir, 'shared.jsonl');
    const realShared = path.join(await realpath(dir), 'shared.jsonl');
    // The same file reached through a symbolic link to its directory.
    await symlink(dir, path.join(dir, 'alias'));
    const config = path.join(dir, 'two-files.yaml');
    await writeFile(
      config,
      `sinks:\n  - type: file\n    name: first\n    path: ${shared}\n  - type: file\n    path: ${path.join(dir, 'alias', 'shared.jsonl')}\n`,
    );
    const sameFile = (a: string, b: string) =>
      new RegExp(
        `^kubediff: ${a} and ${b} would both write ${realShared.replaceAll('.', '\\.')}: give each its own file\\.`,
      );
    const cases = [
      [
        ['--output-file', path.join(dir, 'link.jsonl')],
        /is a symbolic link; kubediff does not follow links there/,
      ],
      [
        ['--output-file', path.join(target, 'events.jsonl')],
        /cannot create the directory .* of the file sink's path/,
      ],
      [['-c', config], sameFile('the sink first', `the sink file ${dir}/alias/shared\\.jsonl`)],
      [
        ['--output-file', `${dir}/./shared.jsonl`, '--dead-letter', shared],
        sameFile(
          `the sink file ${dir}/\\./shared\\.jsonl`,
          `the dead-letter file ${shared.replaceAll('.', '\\.')}`,
        ),
      ],
    ] as const;
    for (const [args, message] of cases) {
      const result = await runKubediffToCompletion([...watchArgs('default', ['configmaps']), ...args], {
        timeoutMs: 60_000,
      });
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, message);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
      assert.doesNotMatch(result.stderr, /\n\s+at /);
    }
  });
});
