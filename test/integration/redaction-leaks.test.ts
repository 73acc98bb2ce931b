// No secret value reaches any output, end to end: the real CLI against the real API server. A seeded corpus
// (test/helpers/secret-corpus.ts) of Secrets, ConfigMaps and custom resources with `redact:` rules is
// created, edited at random and partly deleted while two kubediffs watch it: one with a redaction key,
// --explain, --debug, a state file, a webhook, a refusing webhook (its events go to the dead-letter file)
// and Slack; one printing pretty output with plain hashes. Then more edits while the first is stopped, and
// a restart that catches up on them from the state file; then `kubediff history`. Every output is searched
// for every secret value and its base64 (test/helpers/leak-check.ts): stdout (JSON and pretty), stderr,
// webhook and Slack bodies, the dead-letter file, the state database and its -wal, and history's output.
// The in-process corpus, much larger, is test/unit/redaction-leaks.test.ts.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../src/kube/types.ts';
import { type KubediffProcess, killAll, runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { matching } from '../helpers/events.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { adminClient, type KubeAdmin } from '../helpers/kube-admin.ts';
import { assertNoLeaks, CANARY, fileSource, type LeakSource, receiverSource } from '../helpers/leak-check.ts';
import { seededRandom } from '../helpers/random-json.ts';
import { CORPUS_REDACT_RULES, type CorpusKind, SecretCorpus, VAULT_TYPE } from '../helpers/secret-corpus.ts';

const READY = /watching \d+ resource types?/;
/** Holds the canary: were it ever printed or stored, the scan would find it. */
const KEY = `${CANARY}-e2e-redaction-key`;
const CRD = `${VAULT_TYPE.resource}.${VAULT_TYPE.group}`;

let admin: KubeAdmin;
let kubeconfig: string;
let dir: string;
const receivers: HttpReceiver[] = [];

before(async () => {
  admin = adminClient();
  kubeconfig = testCluster().kubeconfigPath;
  dir = await mkdtemp(path.join(tmpdir(), 'kubediff-leaks-'));
  await admin.deleteCRD(CRD, { wait: true });
  await admin.createCRD(VAULT_TYPE.group, VAULT_TYPE.kind, VAULT_TYPE.resource, {
    shortNames: VAULT_TYPE.shortNames,
  });
});

after(async () => {
  await killAll();
  for (const receiver of receivers) await receiver.close();
  await admin.deleteCRD(CRD).catch(() => {});
  await admin.close();
  await rm(dir, { recursive: true, force: true });
});

interface Tracked {
  kind: CorpusKind;
  name: string;
  body: JsonObject;
  /** The last write's, for the next update (custom resources require it). */
  resourceVersion?: string;
}

const API: Record<CorpusKind, { apiVersion: string; collection: (ns: string) => string }> = {
  Secret: { apiVersion: 'v1', collection: (ns) => `/api/v1/namespaces/${ns}/secrets` },
  ConfigMap: { apiVersion: 'v1', collection: (ns) => `/api/v1/namespaces/${ns}/configmaps` },
  Vault: {
    apiVersion: `${VAULT_TYPE.group}/${VAULT_TYPE.version}`,
    collection: (ns) =>
      `/apis/${VAULT_TYPE.group}/${VAULT_TYPE.version}/namespaces/${ns}/${VAULT_TYPE.resource}`,
  },
};

function manifest(object: Tracked): Record<string, unknown> {
  const { metadata, ...rest } = object.body as { metadata?: JsonObject };
  return {
    apiVersion: API[object.kind].apiVersion,
    kind: object.kind,
    metadata: {
      ...metadata,
      name: object.name,
      ...(object.resourceVersion ? { resourceVersion: object.resourceVersion } : {}),
    },
    ...rest,
  };
}

async function startWatch(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<KubediffProcess> {
  const kd = runKubediff(['watch', '--kubeconfig', kubeconfig, ...args], { env, timeoutMs: 60_000 });
  await kd.waitForStderr(READY, 90_000);
  return kd;
}

describe('no secret value reaches any output (real CLI, real API server)', () => {
  it('stdout JSON and pretty, logs, webhook and Slack bodies, dead letters, the state file, history', async () => {
    const namespace = await admin.createNamespace('leaks');
    const corpus = new SecretCorpus({ seed: 7, apiValid: true }, seededRandom(7));
    const webhook = await HttpReceiver.start();
    const refusing = await HttpReceiver.start({ defaultReply: { status: 400, body: 'refused' } });
    const slack = await HttpReceiver.start();
    const storyHook = await HttpReceiver.start();
    receivers.push(webhook, refusing, slack, storyHook);
    const statePath = path.join(dir, 'state.db');
    const deadLetterPath = path.join(dir, 'dead.jsonl');
    const selection = {
      namespaces: [namespace],
      resources: ['secrets', 'configmaps', CRD],
      redact: CORPUS_REDACT_RULES,
    };
    // JSON is YAML: the config files are written as JSON.
    const config = path.join(dir, 'kubediff.yaml');
    await writeFile(
      config,
      JSON.stringify({
        ...selection,
        clusterName: 'leaks',
        deadLetter: deadLetterPath,
        shutdownTimeout: '20s',
        state: { path: statePath },
        sinks: [
          { type: 'webhook', url: webhook.url('/hook') },
          { type: 'webhook', name: 'refusing', url: refusing.url('/hook') },
          // Slack tells stories by default; this webhook POSTs STORY payloads.
          { type: 'slack', webhookUrl: slack.url('/services/T/B/X') },
          { type: 'webhook', name: 'stories', url: storyHook.url('/stories'), stories: true },
        ],
      }),
    );
    const prettyConfig = path.join(dir, 'pretty.yaml');
    await writeFile(prettyConfig, JSON.stringify(selection));

    const keyed = { KUBEDIFF_REDACTION_KEY: KEY };
    const watchArgs = ['-c', config, '-o', 'json', '--explain', '--debug'];
    const first = await startWatch(watchArgs, keyed);
    const pretty = await startWatch(['-c', prettyConfig, '-o', 'pretty']);
    const prettyStories = await startWatch(['-c', prettyConfig, '-o', 'pretty', '--stories']);

    // The corpus: created, edited three times at random, some deleted; a huge Secret and ConfigMap too.
    const tracked: Tracked[] = [];
    for (const [kind, count] of [
      ['Secret', 10],
      ['ConfigMap', 6],
      ['Vault', 6],
    ] as const) {
      for (let n = 0; n < count; n++)
        tracked.push({ kind, name: `${kind.toLowerCase()}-${n}`, body: corpus.create(kind) });
    }
    const huge = corpus.secret().padEnd(300 * 1024, corpus.secret());
    const hugeSecret = corpus.create('Secret');
    (hugeSecret.data as JsonObject).blob = Buffer.from(huge).toString('base64');
    tracked.push({ kind: 'Secret', name: 'huge', body: hugeSecret });
    const hugeConfigMap = corpus.create('ConfigMap');
    (hugeConfigMap.data as JsonObject).password = huge;
    tracked.push({ kind: 'ConfigMap', name: 'huge', body: hugeConfigMap });
    let writes = 0;
    const write = async (object: Tracked, create = false) => {
      const collection = API[object.kind].collection(namespace);
      const written = create
        ? await admin.create(collection, manifest(object))
        : await admin.update(`${collection}/${object.name}`, manifest(object));
      object.resourceVersion = written.metadata.resourceVersion;
      writes++;
    };
    for (const object of tracked) await write(object, true);
    for (let round = 0; round < 3; round++) {
      for (const object of tracked) {
        object.body = corpus.edit(object.kind, object.body);
        await write(object);
      }
    }
    for (const object of tracked.splice(0, 3)) {
      await admin.delete(`${API[object.kind].collection(namespace)}/${object.name}`);
    }
    const sentinel: Tracked = {
      kind: 'ConfigMap',
      name: 'sentinel',
      body: { data: { color: corpus.visible() } },
    };
    await write(sentinel, true);
    await first.waitForEvent(matching({ type: 'ADDED', name: 'sentinel' }));
    await pretty.waitForStdout(`ADDED   configmaps ${namespace}/sentinel`);
    const walWhileRunning = await fileSource('', `${statePath}-wal`).read();
    const firstResult = await first.stop('SIGTERM', 60_000);
    assert.equal(firstResult.code, 0, firstResult.stderr);
    const prettyResult = await pretty.stop('SIGTERM', 60_000);
    assert.equal(prettyResult.code, 0, prettyResult.stderr);
    // Its open stories are told at the stop.
    const storiesResult = await prettyStories.stop('SIGTERM', 60_000);
    assert.equal(storiesResult.code, 0, storiesResult.stderr);

    // While stopped: edits, found again by the restart's catch-up (LIST items, offline).
    const offline = tracked.filter((_, index) => index % 3 === 0);
    for (const object of offline) {
      object.body = corpus.edit(object.kind, object.body);
      await write(object);
    }
    const second = await startWatch(watchArgs, keyed);
    for (const object of offline) {
      await second.waitForEvent(matching({ type: 'UPDATED', name: object.name }), {
        description: `the offline UPDATED of ${object.kind} ${object.name}`,
      });
    }
    const walWhileCatchingUp = await fileSource('', `${statePath}-wal`).read();
    const secondResult = await second.stop('SIGTERM', 60_000);
    assert.equal(secondResult.code, 0, secondResult.stderr);
    const historyJson = await runKubediffToCompletion(['history', '--state', statePath, '-o', 'json']);
    assert.equal(historyJson.code, 0, historyJson.stderr);
    const historyPretty = await runKubediffToCompletion(['history', '--state', statePath, '-o', 'pretty']);
    assert.equal(historyPretty.code, 0, historyPretty.stderr);

    const hmacMarker = /redacted hmac:[0-9a-f]{8}/;
    const sources: LeakSource[] = [
      { name: 'stdout (json)', read: () => firstResult.stdout, expect: hmacMarker },
      {
        name: 'stderr (--explain --debug)',
        read: () => firstResult.stderr,
        expect: /explain: UPDATED secrets/,
      },
      { name: 'stdout (pretty)', read: () => prettyResult.stdout, expect: /<redacted sha256:/ },
      { name: 'stderr (pretty run)', read: () => prettyResult.stderr, expect: READY },
      { name: 'stdout (pretty --stories)', read: () => storiesResult.stdout, expect: /<redacted sha256:/ },
      receiverSource('webhook STORY bodies', storyHook, hmacMarker),
      { name: 'stdout (catch-up)', read: () => secondResult.stdout, expect: hmacMarker },
      { name: 'stderr (catch-up)', read: () => secondResult.stderr, expect: /explain: UPDATED/ },
      receiverSource('webhook bodies', webhook, hmacMarker),
      receiverSource('refused webhook bodies', refusing, hmacMarker),
      receiverSource('Slack payloads', slack, hmacMarker),
      fileSource('dead-letter file', deadLetterPath, hmacMarker),
      fileSource('state database', statePath, hmacMarker),
      { name: 'state -wal while running', read: () => walWhileRunning },
      { name: 'state -wal while catching up', read: () => walWhileCatchingUp },
      fileSource('state -wal', `${statePath}-wal`),
      fileSource('state -shm', `${statePath}-shm`),
      { name: 'history -o json', read: () => historyJson.stdout, expect: hmacMarker },
      { name: 'history -o pretty', read: () => historyPretty.stdout, expect: hmacMarker },
    ];
    const report = await assertNoLeaks(sources);
    const scanned = Object.values(report.scanned).reduce((sum, size) => sum + size, 0);
    console.log(
      `end-to-end corpus: ${tracked.length + 3} objects, ${writes} writes, ${corpus.secretCount} secret values, ` +
        `${first.events.length + second.events.length} events, ${(scanned / 1e6).toFixed(1)} MB of output scanned`,
    );

    // Changes are visible as markers; what is not secret is shown as it is.
    const hmac = /^<redacted hmac:[0-9a-f]{8}>$/;
    const changes = [...first.events, ...second.events].flatMap((event) =>
      (event.changes ?? []).map((change) => ({ ...change, resource: event.object.resource })),
    );
    const redactedAt = (resource: string, prefix: string) =>
      changes.some(
        (change) =>
          change.resource === resource && change.path.startsWith(prefix) && hmac.test(String(change.to)),
      );
    assert.ok(redactedAt('secrets', '/data/'), 'Secret data changes show markers');
    assert.ok(redactedAt('secrets', '/metadata/annotations/'), 'Secret annotation changes show markers');
    assert.ok(redactedAt('configmaps', '/data/password'), 'redacted ConfigMap keys show markers');
    assert.ok(redactedAt('vaults', '/spec/credentials'), 'redacted custom resource paths show markers');
    assert.ok(
      changes.some((change) => change.path === '/data/color' && String(change.to).startsWith('visible-')),
      'a ConfigMap key without a rule is shown',
    );
    assert.ok(
      changes.some(
        (change) =>
          change.path === '/metadata/annotations/meta.helm.sh~1release-name' &&
          String(change.to).startsWith('visible-'),
      ),
      'an allowlisted Secret annotation is shown',
    );
    assert.ok(
      second.events.some((event) => event.offline),
      'the restart caught up',
    );
    assert.match(prettyResult.stdout, /<redacted sha256:[0-9a-f]{8}>/, 'without a key, plain hashes');

    await admin.deleteNamespace(namespace);
  });

  it('a state file recorded without a redact rule is not compared against: its values are never reported', async () => {
    const namespace = await admin.createNamespace('leaks-state');
    const corpus = new SecretCorpus({ seed: 8, apiValid: true }, seededRandom(8));
    const statePath = path.join(dir, 'rules-changed.db');
    const configmaps = `/api/v1/namespaces/${namespace}/configmaps`;
    const configFile = async (name: string, redact: unknown[]) => {
      const file = path.join(dir, name);
      await writeFile(file, JSON.stringify({ namespaces: [namespace], resources: ['configmaps'], redact }));
      return file;
    };
    // Recorded while the password was not a secret yet: the state file holds it as it was.
    const before = await configFile('before.yaml', []);
    await admin.create(configmaps, { metadata: { name: 'db' }, data: { password: corpus.secret() } });
    const first = await startWatch(['-c', before, '--state', statePath, '-o', 'json']);
    assert.equal((await first.stop('SIGTERM')).code, 0);

    await admin.patch(`${configmaps}/db`, { data: { password: corpus.secret() } });
    const withRule = await configFile('after.yaml', [{ path: '/data/password', resources: ['cm'] }]);
    const second = await startWatch(['-c', withRule, '--state', statePath, '-o', 'json']);
    await second.waitForStderr(/taking a new baseline instead of catching up/);
    await admin.create(configmaps, { metadata: { name: 'sentinel' }, data: { color: corpus.visible() } });
    await second.waitForEvent(matching({ type: 'ADDED', name: 'sentinel' }));
    const result = await second.stop('SIGTERM');
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      second.events.filter((event) => event.object.name === 'db').length,
      0,
      'no catch-up against objects recorded under other rules',
    );
    await assertNoLeaks([
      { name: 'stdout', read: () => result.stdout, expect: /"name":"sentinel"/ },
      { name: 'stderr', read: () => result.stderr, expect: /redaction/ },
    ]);
    await admin.deleteNamespace(namespace);
  });
});
