// `kubediff show`, `diff` and `blame` on a real watched history in a state file: a real kube-apiserver
// with the audit webhook pointed at kubediff (test/helpers/audited-apiserver.ts), so that every change is
// recorded with the user who made it. A Deployment created before the watch (so that some of its lines
// are older than the history), then edited a dozen times by three identities (alice, a ServiceAccount
// and the admin), each with a field manager of its own; a Secret holding canary values. The commands
// must print exactly the version the API server answered at each time, exactly the changes in a window
// (exit 1; 0 for a window without any), the right user per line (and the field manager that owns the
// lines older than the history, from managedFields), never a Secret's value, and how far back the
// history reaches.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { objectYaml } from '../../src/diff/object-yaml.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import {
  type AuditedApiserver,
  needsSharedEtcd,
  startAuditedApiserver,
} from '../helpers/audited-apiserver.ts';
import { type KubediffProcess, killAll, runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import {
  between,
  editDeployment,
  type RecordedEdit,
  recordedForm,
  webDeployment,
} from '../helpers/edited-deployment.ts';
import { KubeAdmin, nextSecond } from '../helpers/kube-admin.ts';
import { assertNoLeaks, CANARY, type LeakSource, secretValue } from '../helpers/leak-check.ts';
import { makeTestPki } from '../helpers/pki.ts';
import { freePorts } from '../helpers/processes.ts';
import { seededRandom } from '../helpers/random-json.ts';

const READY = /watching \d+ resource types?/;
const TOKEN = randomBytes(16).toString('hex');

describe('show, diff and blame on a state file (users from the audit webhook)', {
  skip: needsSharedEtcd(),
}, () => {
  let dir: string;
  let api: AuditedApiserver;
  let admin: KubeAdmin;
  let alice: KubeAdmin;
  let robot: KubeAdmin;
  let ns: string;
  let state: string;
  let kd: KubediffProcess;
  let seeded: RecordedEdit['object'];
  /** After the watch's baseline, before the first change: the history (its oldest event) starts later. */
  let watchedAt: string;
  let edits: RecordedEdit[];
  const users = () => ['alice', `system:serviceaccount:${ns}:robot`, 'admin'];
  const secretValues: string[] = [];
  const outputs: { name: string; text: string }[] = [];

  /** Runs kubediff on the state file; keeps what it printed for the leak check. */
  const run = async (...args: string[]) => {
    const result = await runKubediffToCompletion([...args, '--state', state], { timeoutMs: 30_000 });
    outputs.push({ name: args.join(' '), text: `${result.stdout}${result.stderr}` });
    return result;
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubediff-history-commands-'));
    const pki = makeTestPki();
    const file = async (name: string, content: string) => {
      const at = path.join(dir, name);
      await writeFile(at, content, { mode: 0o600 });
      return at;
    };
    const [port] = (await freePorts(1)) as [number];
    api = await startAuditedApiserver({
      webhook: {
        url: `https://127.0.0.1:${port}/audit`,
        caPem: pki.caPem,
        clientCert: pki.clientCert,
        clientKey: pki.clientKey,
        token: TOKEN,
      },
    });
    admin = new KubeAdmin(api);
    ns = await admin.createNamespace('git');
    const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}`;
    await admin.create(`${rbac}/roles`, {
      metadata: { name: 'editor' },
      rules: [
        { apiGroups: ['apps'], resources: ['deployments'], verbs: ['*'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['*'] },
      ],
    });
    const bind = (name: string, subject: Record<string, string>) =>
      admin.create(`${rbac}/rolebindings`, {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'editor' },
        subjects: [subject],
      });
    await bind('alice-edit', { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' });
    await admin.create(`/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'robot' } });
    await bind('robot-edit', { kind: 'ServiceAccount', name: 'robot', namespace: ns });
    const review = (await admin.create(`/api/v1/namespaces/${ns}/serviceaccounts/robot/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 3600 },
    })) as unknown as { status: { token: string } };
    alice = admin.as(api.aliceToken);
    robot = admin.as(review.status.token);

    // Before the watch: its lines are older than the history.
    const created = await admin.send<KubeObject>('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, {
      query: { fieldManager: 'seed-tool' },
      body: webDeployment('web'),
    });
    seeded = recordedForm(created);
    // managedFields tell times to the second: the edits below must come in a later second than the creation, or
    // blame rightly cannot say who created it (on a fast machine the watch starts within that second).
    await nextSecond(String(created.metadata.creationTimestamp));
    state = path.join(dir, 'state.db');
    kd = runKubediff(
      [
        'watch',
        '--kubeconfig',
        api.kubeconfigPath,
        '-o',
        'json',
        '-n',
        ns,
        '-r',
        'deployments',
        '-r',
        'secrets',
        '--audit-listen',
        `127.0.0.1:${port}`,
        '--audit-cert',
        await file('tls.crt', pki.serverCert),
        '--audit-key',
        await file('tls.key', pki.serverKey),
        '--audit-client-ca',
        await file('ca.crt', pki.caPem),
        '--audit-wait',
        '5s',
        '--state',
        state,
      ],
      { env: { KUBEDIFF_AUDIT_TOKEN: TOKEN }, timeoutMs: 30_000, checkEvents: true },
    );
    await kd.waitForStderr(READY);
    watchedAt = new Date().toISOString();
    edits = await editDeployment(
      [
        { client: alice, manager: 'alice-tool' },
        { client: robot, manager: 'robot-scaler' },
        { client: admin, manager: 'admin-console' },
      ],
      ns,
      'web',
      kd,
    );
    const random = seededRandom(32);
    secretValues.push(secretValue(random, 40), secretValue(random, 40));
    const secrets = `/api/v1/namespaces/${ns}/secrets`;
    await alice.create(secrets, { metadata: { name: 'db' }, stringData: { password: secretValues[0]! } });
    await kd.waitForEvent((event) => event.type === 'ADDED' && event.object.name === 'db');
    await robot.patch(`${secrets}/db`, { stringData: { password: secretValues[1]! } });
    await kd.waitForEvent((event) => event.type === 'UPDATED' && event.object.name === 'db');
    // Everything recorded: a clean stop commits what the sinks have finished with.
    assert.equal((await kd.stop()).code, 0);
  });

  after(async () => {
    await killAll();
    await Promise.all([alice?.close(), robot?.close(), admin?.close()]);
    await api?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const yamlOf = (stdout: string) => parse(stdout.replace(/^#.*\n/gm, ''));

  it('show --at prints exactly the version the API server answered then, whichever way the time is given', async () => {
    for (const index of [0, 4, 10]) {
      const at = between(edits[index]!.event, edits[index + 1]!.event);
      const shown = await run('show', 'deploy/web', '-n', ns, '--at', at);
      assert.equal(shown.code, 0, shown.stderr);
      assert.deepEqual(yamlOf(shown.stdout), edits[index]!.object, `the version at ${at}`);
      assert.match(
        shown.stdout,
        new RegExp(
          `^# deployments\\.apps ${ns}/web at ${at.replace(/\./g, '\\.')}: the version recorded at `,
        ),
      );
    }
    // An event id: the version right after that event; JSON on request; now by default.
    const byId = await run('show', 'deploy/web', '-n', ns, '--at', edits[6]!.event.id, '-o', 'json');
    assert.deepEqual(JSON.parse(byId.stdout), edits[6]!.object);
    assert.match(byId.stderr, /kubediff: deployments\.apps .*\/web at event .*: the version recorded at/);
    const now = await run('show', 'deploy/web', '-n', ns);
    assert.deepEqual(yamlOf(now.stdout), edits.at(-1)!.object);
  });

  it('diff --from --to prints exactly the changes in between and exits 1; 0 for a window without any', async () => {
    const from = between(edits[2]!.event, edits[3]!.event);
    const to = between(edits[7]!.event, edits[8]!.event);
    const diff = await run('diff', 'deploy/web', '-n', ns, '--from', from, '--to', to);
    assert.equal(diff.code, 1, diff.stderr);
    // The changes listed: edits 4 to 8, each with its user.
    const listed = diff.stdout.split('\n').filter((line) => /^\d\d:\d\d:\d\dZ UPDATED /.test(line));
    assert.deepEqual(
      listed.map((line) => /by (\S+)/.exec(line)?.[1]),
      edits.slice(3, 8).map((edit) => users()[edit.editor]),
    );
    // The unified diff: what differs between the two versions, and nothing else.
    const removed = diff.stdout.split('\n').filter((line) => /^-(?!--)/.test(line));
    const added = diff.stdout.split('\n').filter((line) => /^\+(?!\+\+)/.test(line));
    const texts = (lines: string[]) => lines.map((line) => line.slice(1).trim()).sort();
    assert.deepEqual(texts(removed), ['image: registry.local/web:2', 'replicas: 3', 'value: a']);
    assert.deepEqual(texts(added), [
      'image: registry.local/web:3',
      'replicas: 5',
      'team: shop',
      'tier: front',
      'value: b',
    ]);
    assert.match(
      diff.stdout,
      new RegExp(`^--- deployments\\.apps/${ns}/web\\tthe version recorded at ${edits[2]!.event.time}`, 'm'),
    );
    // Without --from: from the oldest version kept, the state the watch started from.
    const whole = await run('diff', 'deploy/web', '-n', ns);
    assert.equal(whole.code, 1);
    assert.match(whole.stdout, /^--- .*\tthe state before the oldest change kept, unchanged since /m);
    assert.match(whole.stdout, /^- {2}replicas: 1$/m);
    assert.match(whole.stdout, /^\+ {8}image: registry\.local\/web:4$/m);
    assert.equal(whole.stdout.split('\n').filter((line) => / UPDATED /.test(line)).length, 12);
    const seededLines = new Set(objectYaml(seeded).split('\n'));
    const lastLines = new Set(objectYaml(edits.at(-1)!.object).split('\n'));
    for (const line of whole.stdout.split('\n')) {
      if (/^-(?!--)/.test(line))
        assert.ok(seededLines.has(line.slice(1)), `${line}: not a line of the seeded version`);
      if (/^\+(?!\+\+)/.test(line))
        assert.ok(lastLines.has(line.slice(1)), `${line}: not a line of the last version`);
    }
    const quiet = await run(
      'diff',
      'deploy/web',
      '-n',
      ns,
      '--from',
      between(edits[11]!.event, edits[11]!.event),
      '--to',
      'now',
    );
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.match(quiet.stdout, new RegExp(`^# deployments\\.apps ${ns}/web: 0 changes from `, 'm'));
    assert.doesNotMatch(quiet.stdout, /^@@/m);
    // Every object changed in the window of a namespace: the Deployment and the Secret.
    const all = await run('diff', '-n', ns, '--since', '1h');
    assert.equal(all.code, 1, all.stderr);
    assert.deepEqual(
      all.stdout
        .split('\n')
        .filter((line) => line.startsWith('# ') && / changes? from /.test(line))
        .map((line) => line.split(':')[0]),
      [`# deployments.apps ${ns}/web`, `# secrets ${ns}/db`],
    );
  });

  it('blame names the user who last changed each line, and the owner of the lines older than the history', async () => {
    const blame = await run(
      'blame',
      'deploy/web',
      '-n',
      ns,
      '--kubeconfig',
      api.kubeconfigPath,
      '-o',
      'json',
    );
    assert.equal(blame.code, 0, blame.stderr);
    const lines = blame.stdout
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            text: string;
            user?: string;
            manager?: string;
            source: string;
            time?: string;
          },
      );
    const who = (text: string) => {
      const line = lines.find((candidate) => candidate.text.trim() === text);
      assert.ok(line, `no line "${text}" in ${blame.stdout}`);
      return line.source === 'history' ? `${line.user} at ${line.time}` : `${line.source}: ${line.manager}`;
    };
    const last = (index: number) => `${users()[edits[index]!.editor]} at ${edits[index]!.event.time}`;
    assert.equal(who('image: registry.local/web:4'), last(11));
    assert.equal(who('replicas: 2'), last(9));
    assert.equal(who('team: shop'), last(7));
    assert.equal(who('value: b'), last(5));
    assert.equal(who('- name: DEBUG'), last(8));
    assert.equal(who('value: "1"'), last(8));
    // Lines the watch never saw change: their owner now, from managedFields.
    assert.equal(who('app: web'), 'managedFields: seed-tool');
    // What no manager owns (kind, name…) and the keys of maps: the creator's.
    assert.equal(who('kind: Deployment'), 'managedFields: seed-tool');
    assert.equal(who('selector:'), 'managedFields: seed-tool');
    // Text: the user, or the manager marked "(now)", beside each line.
    const text = await run('blame', 'deploy/web', '-n', ns, '--kubeconfig', api.kubeconfigPath);
    assert.match(
      text.stdout,
      /^ \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+admin\s+ {8}image: registry\.local\/web:4$/m,
    );
    assert.match(text.stdout, /^≤\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+seed-tool \(now\)\s+ {4}app: web$/m);
    // Offline: the history alone, the older lines unattributed.
    const offline = await run('blame', 'deploy/web', '-n', ns, '--offline', '-o', 'json');
    assert.ok(
      offline.stdout
        .split('\n')
        .some((line) => line.includes('"text":"    app: web"') && line.includes('"source":"unknown"')),
    );
    // At an earlier time: the version then.
    const earlier = await run(
      'blame',
      'deploy/web',
      '-n',
      ns,
      '--offline',
      '--at',
      between(edits[4]!.event, edits[5]!.event),
    );
    assert.match(
      earlier.stdout,
      new RegExp(`\\s${users()[edits[4]!.editor]!.replace(/[.:]/g, '\\$&')}\\s+ {2}replicas: 5$`, 'm'),
    );
  });

  it("never prints a Secret's value, and says that values are redacted", async () => {
    const show = await run('show', 'secret/db', '-n', ns);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /^# Secret values .*are redacted/m);
    assert.match(show.stdout, /password: <redacted sha256:[0-9a-f]{8}>/);
    const diff = await run('diff', 'secrets/db', '-n', ns);
    assert.equal(diff.code, 1);
    assert.match(diff.stdout, /^\+ {2}password: <redacted sha256:[0-9a-f]{8}>$/m);
    const blame = await run('blame', 'secret/db', '-n', ns, '--offline');
    assert.match(blame.stdout, /password: <redacted sha256:/);
    assert.match(blame.stdout, new RegExp(`system:serviceaccount:${ns}:robot\\s+ {2}password: <redacted`));
    const exercised = /<redacted sha256:[0-9a-f]{8}>/;
    const sources: LeakSource[] = [
      { name: 'show secret/db', read: () => show.stdout, expect: exercised },
      { name: 'diff secrets/db', read: () => diff.stdout, expect: exercised },
      { name: 'blame secret/db', read: () => blame.stdout, expect: exercised },
      ...outputs.map((output) => ({ name: `kubediff ${output.name}`, read: () => output.text })),
    ];
    await assertNoLeaks(sources);
    assert.ok(secretValues.every((value) => value.includes(CANARY)));
  });

  it('a time before the history says how far back it reaches; wrong input is one sentence, exit 2', async () => {
    // The history starts at its oldest event (the baseline is silent): the first edit.
    const old = await run('show', 'deploy/web', '-n', ns, '--at', watchedAt);
    assert.equal(old.code, 1);
    assert.equal(
      old.stderr,
      `kubediff: ${watchedAt} is before the history's start: it reaches back to ${edits[0]!.event.time}, so nothing older is known of deployments.apps ${ns}/web.\n`,
    );
    const oldDiff = await run('diff', 'deploy/web', '-n', ns, '--from', '2020-01-01T00:00:00Z');
    assert.equal(oldDiff.code, 2, 'diff: every error exits 2, never 1 (differences)');
    assert.match(oldDiff.stderr, /before the history's start/);
    for (const args of [
      ['show', 'deploy', '-n', ns],
      ['show', 'deploy/web', '--at', 'yesterday'],
      ['blame', 'deploymnets/web', '-n', ns],
      ['diff', '-n', ns],
    ]) {
      const result = await run(...args);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, /^kubediff: [^\n]+\.\n$/, args.join(' '));
    }
    const missing = await run('show', 'deploy/nothing', '-n', ns);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /has no history of deployments\.apps .*\/nothing/);
    const elsewhere = await run('show', 'deploy/web');
    assert.match(elsewhere.stderr, new RegExp(`it is recorded in namespace ${ns}: add -n ${ns}\\.`));
  });
});
