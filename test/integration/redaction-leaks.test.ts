// No secret value reaches any output, end to end: the real CLI against the real API server. A seeded corpus
// (test/helpers/secret-corpus.ts) of Secrets, ConfigMaps and custom resources with `redact:` rules is
// created, edited at random and partly deleted while two kubediffs watch it: one with a redaction key,
// --explain, --debug, a state file, a webhook, a refusing webhook (its events go to the dead-letter file),
// Slack, Teams, Discord, Mattermost and Google Chat (a message per story, by default), a webhook of STORY
// payloads, Kafka, an OpenTelemetry Collector (OTLP), OpenSearch, CloudEvents (binary mode) and a webhook
// layout; one printing pretty output with plain hashes, one pretty --stories. Then more edits while the
// first is stopped, and a restart that catches up on them from the state file; then `kubediff history` and
// `kubediff ui`. Every output is searched for every secret value and its base64 (test/helpers/leak-check.ts):
// stdout (JSON and pretty), stderr, webhook and every chat platform's bodies, Kafka records (keys, headers,
// values), the Collector's output files, the OpenSearch documents, the CloudEvents and layout bodies and
// headers, the dead-letter file and its rotated files, /readyz and /metrics, the state database and its
// -wal, history's output, show, diff, blame and why, and every answer of the UI's API (the events table's
// first changes, every object's versions as YAML and their diff); the pretty run records in PostgreSQL, whose
// tables and history are searched too.
// Configured credentials (issue 36): a watch with every sink type, each against a receiver that answers
// 401, 403, 400 and 500 with the whole request it got, Kafka's SASL against the real broker with a wrong
// password, and a PostgreSQL server that quotes the password it was sent: none in stderr, /metrics,
// /readyz or the dead letters.
// The in-process corpus, much larger, is test/unit/redaction-leaks.test.ts.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../src/kube/types.ts';
import { type KubediffProcess, killAll, runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { kubectl } from '../helpers/deploy.ts';
import { startEchoingPostgres } from '../helpers/echoing-postgres.ts';
import { matching } from '../helpers/events.ts';
import { readFileSinkLines } from '../helpers/file-sink-files.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { consume, createTopic } from '../helpers/kafka.ts';
import { testKafka, testTopic } from '../helpers/kafka-env.ts';
import { adminClient, type KubeAdmin } from '../helpers/kube-admin.ts';
import {
  assertNoLeaks,
  CANARY,
  credentialValue,
  fileSource,
  type LeakSource,
  receiverSource,
} from '../helpers/leak-check.ts';
import { SERVING } from '../helpers/metrics.ts';
import { testIndex, testOpenSearch } from '../helpers/opensearch-env.ts';
import { testCollector } from '../helpers/otelcol-env.ts';
import { psql } from '../helpers/postgres.ts';
import { createTestDatabase } from '../helpers/postgres-env.ts';
import { seededRandom } from '../helpers/random-json.ts';
import { CORPUS_REDACT_RULES, type CorpusKind, SecretCorpus, VAULT_TYPE } from '../helpers/secret-corpus.ts';

const READY = /watching \d+ resource types?/;
/** What the echoing receivers answer, in turn: every sink meets each of them. */
const ECHO_STATUSES = [401, 403, 400, 500] as const;
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

/**
 * `kubediff ui` on the state file: every answer its API gives (facets, every page of events, the
 * timeline, the live stream from the start, every object's history with its oldest and newest rebuilt
 * versions), concatenated for the leak scan.
 */
async function readEverythingFromUi(
  statePath: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ all: string; events: string; objects: string }> {
  const ui = runKubediff(['ui', '--state', statePath, '--listen', '127.0.0.1:0'], { env });
  const origin = (await ui.waitForStderr(/serving the change history on (http:\/\/\S+?)\//))[1]!;
  const answers: string[] = [];
  // The events table's pages (their first changes) and the object answers (versions as YAML, their diff),
  // apart too: each is a source of its own.
  const eventPages: string[] = [];
  const objectAnswers: string[] = [];
  const get = async (pathAndQuery: string, kept?: string[]) => {
    const response = await fetch(`${origin}${pathAndQuery}`);
    const text = await response.text();
    assert.equal(response.status, 200, `${pathAndQuery}: ${text}`);
    answers.push(text);
    kept?.push(text);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const facets = await get('/api/v1/facets');
  await get(
    `/api/v1/timeline?from=${String(facets.first)}&to=${new Date(Date.now() + 60_000).toISOString()}`,
  );
  const objects = new Map<string, string>();
  let before = '';
  for (;;) {
    const page = await get(`/api/v1/events?limit=500${before}`, eventPages);
    for (const event of page.events as { resource: string; namespace?: string; name: string }[]) {
      const query = `kind=${event.resource}&namespace=${event.namespace ?? ''}&name=${event.name}`;
      objects.set(query, query);
    }
    if (page.next === undefined) break;
    before = `&before=${String(page.next)}`;
  }
  for (const query of objects.values()) {
    const history = await get(`/api/v1/object?${query}`, objectAnswers);
    const rebuildable = history.rebuildable as number[];
    if (rebuildable.length > 0)
      await get(`/api/v1/object?${query}&a=${rebuildable.at(-1)}&b=${rebuildable[0]}`, objectAnswers);
  }
  const abort = new AbortController();
  const stream = await fetch(`${origin}/api/v1/stream?after=0`, { signal: abort.signal });
  let text = '';
  for await (const chunk of stream.body!) {
    text += Buffer.from(chunk as Uint8Array).toString('utf8');
    if (text.includes('event: events')) break;
  }
  abort.abort();
  answers.push(text);
  const stopped = await ui.stop('SIGTERM');
  assert.equal(stopped.code, 0, stopped.stderr);
  answers.push(stopped.stderr);
  return { all: answers.join('\n'), events: eventPages.join('\n'), objects: objectAnswers.join('\n') };
}

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

/**
 * A pod (pending: the shared cluster runs none) that reads a Secret or ConfigMap of the corpus by each of
 * its keys, by envFrom and as a volume: the object's events then name it in usedBy.
 */
async function createReader(namespace: string, object: Tracked): Promise<void> {
  const secret = object.kind === 'Secret';
  const keys = Object.keys((object.body.data ?? {}) as JsonObject);
  const ref = (key: string) =>
    secret ? { secretKeyRef: { name: object.name, key } } : { configMapKeyRef: { name: object.name, key } };
  const pod = {
    metadata: { name: `reads-${object.kind.toLowerCase()}-${object.name}` },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'registry.test/app:1',
          env: keys.map((key, n) => ({ name: `V${n}`, valueFrom: ref(key) })),
          envFrom: [secret ? { secretRef: { name: object.name } } : { configMapRef: { name: object.name } }],
          volumeMounts: [{ name: 'v', mountPath: '/v' }],
        },
      ],
      volumes: [
        {
          name: 'v',
          ...(secret ? { secret: { secretName: object.name } } : { configMap: { name: object.name } }),
        },
      ],
    },
  };
  // The namespace's default ServiceAccount may not exist yet: pods are refused until it does.
  await admin.waitFor(
    () => admin.create(`/api/v1/namespaces/${namespace}/pods`, pod).catch(() => undefined),
    {
      what: `the reader pod of ${object.kind} ${object.name}`,
    },
  );
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
  // The whole corpus through the API server and every output: about 290 s alone at load 22 on 2 cores, so the
  // runner's 300 s per test is a hang guard too close to it; this one's guard is 15 minutes.
  it('stdout JSON and pretty, logs, webhook, chat and Kafka deliveries, dead letters, the state file, history', {
    timeout: 900_000,
  }, async () => {
    const namespace = await admin.createNamespace('leaks');
    const corpus = new SecretCorpus({ seed: 7, apiValid: true }, seededRandom(7));
    const webhook = await HttpReceiver.start();
    const refusing = await HttpReceiver.start({ defaultReply: { status: 400, body: 'refused' } });
    const slack = await HttpReceiver.start();
    const teams = await HttpReceiver.start();
    const discord = await HttpReceiver.start({ defaultReply: { status: 204, body: '' } });
    const mattermost = await HttpReceiver.start();
    const googleChat = await HttpReceiver.start();
    const storyHook = await HttpReceiver.start();
    const cloudEvents = await HttpReceiver.start();
    const layout = await HttpReceiver.start();
    receivers.push(
      webhook,
      refusing,
      slack,
      teams,
      discord,
      mattermost,
      googleChat,
      storyHook,
      cloudEvents,
      layout,
    );
    const collector = testCollector();
    const search = testOpenSearch();
    const searchIndex = testIndex('leaks');
    const kafka = testKafka();
    const topic = testTopic('leaks');
    await createTopic(kafka, topic, { partitions: 2 });
    const statePath = path.join(dir, 'state.db');
    const deadLetterPath = path.join(dir, 'dead.jsonl');
    const fileSinkPath = path.join(dir, 'file-sink', 'events.jsonl');
    const selection = {
      namespaces: [namespace],
      // Pods that read the Secrets and ConfigMaps: their changes carry usedBy, with names and keys.
      resources: ['secrets', 'configmaps', 'pods', CRD],
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
        // Small enough that the refused webhook's dead letters rotate (and the oldest is dropped at the
        // cap): the rotated files are outputs too.
        deadLetterMaxSize: '4KB',
        deadLetterMaxFiles: 3,
        shutdownTimeout: '20s',
        state: { path: statePath },
        sinks: [
          { type: 'webhook', url: webhook.url('/hook') },
          { type: 'webhook', name: 'refusing', url: refusing.url('/hook') },
          // Slack tells stories by default; this webhook POSTs STORY payloads.
          { type: 'slack', webhookUrl: slack.url('/services/T/B/X') },
          { type: 'teams', webhookUrl: teams.url('/workflows/X') },
          { type: 'discord', webhookUrl: discord.url('/api/webhooks/1/X') },
          { type: 'mattermost', webhookUrl: mattermost.url('/hooks/X') },
          { type: 'google-chat', webhookUrl: googleChat.url('/v1/spaces/X/messages') },
          { type: 'kafka', brokers: [kafka.brokers], topic },
          { type: 'webhook', name: 'stories', url: storyHook.url('/stories'), stories: true },
          { type: 'otlp', endpoint: collector.httpEndpoint },
          { type: 'opensearch', url: search.url, index: searchIndex },
          // Rotating at 4 KB: the gzipped rotated files are outputs too (read decompressed).
          { type: 'file', path: fileSinkPath, maxSize: '4KB', maxFiles: 1000 },
          {
            type: 'webhook',
            name: 'cloudevents',
            url: cloudEvents.url('/ce'),
            format: 'cloudevents',
            cloudEventsMode: 'binary',
          },
          {
            type: 'webhook',
            name: 'layout',
            url: layout.url('/layout'),
            layout: '{ "text": type & " " & object.name, "changes": changes, "owner": owner, "by": by }',
          },
        ],
      }),
    );
    const prettyConfig = path.join(dir, 'pretty.yaml');
    await writeFile(prettyConfig, JSON.stringify(selection));
    // The pretty run records in PostgreSQL (password from the environment, never in the URL).
    const database = await createTestDatabase('redaction leaks');
    after(() => database.drop());
    const pgUrl = new URL(database.url);
    pgUrl.password = '';
    const pgEnv = { PGPASSWORD: database.info.password };

    const keyed = { KUBEDIFF_REDACTION_KEY: KEY };
    const watchArgs = ['-c', config, '-o', 'json', '--explain', '--debug', '--listen', '127.0.0.1:0'];
    const first = await startWatch(watchArgs, keyed);
    const [, healthBase] = await first.waitForStderr(SERVING);
    const pretty = await startWatch(['-c', prettyConfig, '-o', 'pretty', '--state', pgUrl.href], pgEnv);
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
    for (const object of tracked) if (object.kind !== 'Vault') await createReader(namespace, object);
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
    // usedBy is among the outputs searched: Secret changes name the pods that read them, and the keys.
    assert.ok(
      first.events.some(
        (event) =>
          event.object.kind === 'Secret' &&
          event.usedBy?.workloads.some((workload) => workload.via.some((via) => via.type === 'env')),
      ),
      'a Secret event names its readers (usedBy)',
    );
    await pretty.waitForStdout(`ADDED   configmaps ${namespace}/sentinel`);
    const walWhileRunning = await fileSource('', `${statePath}-wal`).read();
    const served = async (route: string) => {
      const response = await fetch(`${healthBase}${route}`);
      return `${response.status} ${await response.text()}`;
    };
    const readyz = await served('/readyz');
    const metrics = await served('/metrics');
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
    const historyPostgres = await runKubediffToCompletion(['history', '--state', pgUrl.href, '-o', 'json'], {
      env: pgEnv,
    });
    assert.equal(historyPostgres.code, 0, historyPostgres.stderr);
    // show, diff and blame: every version of every object changed (diff over the window), and a few
    // objects whole, on the file and on PostgreSQL.
    const objectCommands = async (state: string, env?: Record<string, string>) => {
      const outputs: string[] = [];
      const whyOutputs: string[] = [];
      const run = async (...args: string[]) => {
        const result = await runKubediffToCompletion([...args, '--state', state], { env, timeoutMs: 60_000 });
        assert.ok(
          result.code === 0 || (args[0] === 'diff' && result.code === 1),
          `${args.join(' ')}: ${result.stderr}`,
        );
        (args[0] === 'why' ? whyOutputs : outputs).push(result.stdout, result.stderr);
      };
      await run('diff', '-n', namespace, '--since', '1h');
      for (const name of [
        'secret/huge',
        'configmap/huge',
        `${CRD}/${tracked.find((object) => object.kind !== 'Secret' && object.kind !== 'ConfigMap')?.name}`,
      ]) {
        await run('show', name, '-n', namespace);
        await run('show', name, '-n', namespace, '-o', 'json');
        await run('blame', name, '-n', namespace, '--offline');
        await run('diff', name, '-n', namespace);
      }
      // why: a pod that reads a Secret (and one that reads a ConfigMap) lists the changes of what it
      // reads, text and JSON.
      for (const reader of ['reads-secret-secret-3', 'reads-secret-huge', 'reads-configmap-configmap-0']) {
        await run('why', `pod/${reader}`, '-n', namespace);
        await run('why', `pod/${reader}`, '-n', namespace, '-o', 'json');
      }
      return { shown: outputs.join('\n'), why: whyOutputs.join('\n') };
    };
    const objectOutputs = await objectCommands(statePath);
    // resources --used-by reads each Secret and ConfigMap from the API server (values and all) and the pods
    // that read them: as a table and as JSON, only names and keys may come out.
    const usedByOutputs: string[] = [];
    for (const object of tracked.filter((tracked) => tracked.kind !== 'Vault')) {
      for (const output of ['table', 'json']) {
        const result = await runKubediffToCompletion(
          [
            'resources',
            '--kubeconfig',
            kubeconfig,
            '-n',
            namespace,
            '--used-by',
            `${object.kind}/${object.name}`,
          ].concat(output === 'json' ? ['-o', 'json'] : []),
          { timeoutMs: 60_000 },
        );
        assert.equal(result.code, 0, result.stderr);
        usedByOutputs.push(result.stdout, result.stderr);
      }
    }
    const objectOutputsPostgres = await objectCommands(pgUrl.href, pgEnv);
    const postgresTables = await psql(
      database.info,
      'SELECT * FROM kubediff_objects; SELECT * FROM kubediff_events; SELECT * FROM kubediff_resources; SELECT * FROM kubediff_meta',
    );

    const uiAnswers = await readEverythingFromUi(statePath);
    const uiPostgresAnswers = await readEverythingFromUi(pgUrl.href, pgEnv);

    const hmacMarker = /redacted hmac:[0-9a-f]{8}/;
    const deadLetterMark = '"sink":"refusing"';
    // Both runs produce every event they print to Kafka (at least once: a count, not an exact match).
    const produced =
      firstResult.stdout.split('\n').filter(Boolean).length +
      secondResult.stdout.split('\n').filter(Boolean).length;
    const records = await consume(kafka, topic, { count: produced, idleTimeoutMs: 15_000 });
    assert.ok(records.length >= produced, `${records.length} Kafka records for ${produced} events`);
    const kafkaText = records.map((r) => `${r.key} ${JSON.stringify(r.headers)} ${r.value}\n`).join('');
    const { readdir } = await import('node:fs/promises');
    const collectorText = (
      await Promise.all(
        (
          await readdir(collector.outputDir)
        ).map((file) => readFile(path.join(collector.outputDir, file), 'utf8')),
      )
    ).join('\n');
    await fetch(`${search.url}/${searchIndex}-*/_refresh`, { method: 'POST' });
    const searchAnswer = await fetch(`${search.url}/${searchIndex}-*/_search?size=10000`);
    const searchText = await searchAnswer.text();
    assert.equal(searchAnswer.status, 200, searchText);
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
      receiverSource('Teams payloads', teams, hmacMarker),
      receiverSource('Discord payloads', discord, hmacMarker),
      receiverSource('Mattermost payloads', mattermost, hmacMarker),
      receiverSource('Google Chat payloads', googleChat, hmacMarker),
      { name: 'Kafka records (key, headers, value)', read: () => kafkaText, expect: hmacMarker },
      { name: 'OpenTelemetry Collector output (OTLP)', read: () => collectorText, expect: hmacMarker },
      { name: 'OpenSearch documents', read: () => searchText, expect: hmacMarker },
      receiverSource('CloudEvents (binary) bodies and ce-* headers', cloudEvents, hmacMarker),
      receiverSource('webhook layout bodies', layout, hmacMarker),
      {
        name: 'file sink (live file and gunzipped rotated files)',
        read: async () => (await readFileSinkLines(fileSinkPath)).join('\n'),
        expect: hmacMarker,
      },
      // Which events each file holds depends on the order the refused deliveries end in: a file may hold
      // none with a redacted value (a DELETED, an edit of a visible field). Each holds dead letters; the
      // redacted values are checked in them all together below.
      fileSource('dead-letter file', deadLetterPath, deadLetterMark),
      fileSource('rotated dead-letter file .1', `${deadLetterPath}.1`, deadLetterMark),
      fileSource('rotated dead-letter file .2', `${deadLetterPath}.2`, deadLetterMark),
      { name: '/readyz', read: () => readyz, expect: /^200 / },
      { name: '/metrics', read: () => metrics, expect: /kubediff_events_total/ },
      fileSource('state database', statePath, hmacMarker),
      { name: 'state -wal while running', read: () => walWhileRunning },
      { name: 'state -wal while catching up', read: () => walWhileCatchingUp },
      fileSource('state -wal', `${statePath}-wal`),
      fileSource('state -shm', `${statePath}-shm`),
      { name: 'history -o json', read: () => historyJson.stdout, expect: hmacMarker },
      { name: 'history -o pretty', read: () => historyPretty.stdout, expect: hmacMarker },
      { name: 'kubediff ui API answers', read: () => uiAnswers.all, expect: hmacMarker },
      // The answers the UI's new views read (issue 41): the events table's first changes, an object's
      // versions as YAML and their diff.
      {
        name: 'kubediff ui events table (first changes)',
        read: () => uiAnswers.events,
        expect: /"first":\[[^\]]*redacted hmac:/,
      },
      {
        name: 'kubediff ui object answers: versions as YAML, their diff',
        read: () => uiAnswers.objects,
        expect: /"yaml":\{"\d+":"(?:[^"\\]|\\.)*redacted hmac:/,
      },
      { name: 'kubediff ui object answers: a diff', read: () => uiAnswers.objects, expect: /"diff":\["/ },
      {
        name: 'kubediff ui API answers (PostgreSQL history)',
        read: () => uiPostgresAnswers.all,
        expect: /<redacted sha256:/,
      },
      { name: 'PostgreSQL state tables', read: () => postgresTables, expect: /<redacted sha256:/ },
      { name: 'history from PostgreSQL', read: () => historyPostgres.stdout, expect: /<redacted sha256:/ },
      { name: 'show, diff, blame', read: () => objectOutputs.shown, expect: hmacMarker },
      {
        name: 'why (text and JSON)',
        read: () => objectOutputs.why,
        expect: /"relation":"uses"[^\n]*redacted hmac:/,
      },
      {
        name: 'why from PostgreSQL (text and JSON)',
        read: () => objectOutputsPostgres.why,
        expect: /"relation":"uses"[^\n]*redacted sha256:/,
      },
      {
        name: 'resources --used-by (table and JSON)',
        read: () => usedByOutputs.join('\n'),
        expect: /\bpod\/reads-secret-/,
      },
      {
        name: 'show, diff, blame from PostgreSQL',
        read: () => objectOutputsPostgres.shown,
        expect: /<redacted sha256:/,
      },
    ];
    const report = await assertNoLeaks(sources);
    const deadLetters = await Promise.all(
      ['', '.1', '.2'].map((suffix) => readFile(`${deadLetterPath}${suffix}`, 'utf8')),
    );
    assert.match(deadLetters.join(''), hmacMarker, 'the dead letters hold the redacted values');
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
    for (const resource of ['configmaps', 'vaults']) {
      assert.ok(
        changes.some(
          (change) =>
            change.resource === resource &&
            change.path === '/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration' &&
            /<redacted hmac:[0-9a-f]{8}>/.test(String(change.to)) &&
            String(change.to).includes('visible-'),
        ),
        `the last-applied copies of ${resource} show markers inside, and their visible values`,
      );
    }
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

  it('no configured credential reaches stderr, /metrics, /readyz or a dead letter, whatever a receiver echoes with 401, 403, 400 or 500 (issue 36)', async () => {
    const namespace = await admin.createNamespace('leaks-echo');
    const random = seededRandom(36);
    const credential = (length = 24) => credentialValue(random, length);
    /** A receiver for one sink: it answers 401, 403, 400, 500 in turn, with the whole request it got. */
    const echo = async () => {
      const receiver = await HttpReceiver.start({
        respond: (request) => ({
          status: ECHO_STATUSES[request.index % ECHO_STATUSES.length]!,
          headers: { 'content-type': 'application/json' },
          body:
            request.index % 2 === 0
              ? JSON.stringify({
                  method: request.method,
                  path: request.path,
                  headers: request.headers,
                  body: request.body,
                })
              : `${request.method} ${request.path}\n${Object.entries(request.headers)
                  .map(([name, value]) => `${name}: ${String(value)}`)
                  .join('\n')}\n\n${request.body}`,
        }),
      });
      receivers.push(receiver);
      return receiver;
    };
    const echoes: Record<string, HttpReceiver> = {};
    for (const name of [
      'webhook',
      'layout',
      'cloudevents',
      'slack-webhook',
      'slack-bot',
      'teams',
      'discord',
      'mattermost',
      'google-chat',
      'otlp',
      'opensearch',
      'elasticsearch',
    ])
      echoes[name] = await echo();
    const kafka = testKafka();
    const plain = kafka.users?.PLAIN;
    const headersFile = path.join(dir, 'echo-headers');
    await writeFile(headersFile, `Authorization: Bearer ${credential()}\nX-Api-Key: ${credential()}\n`, {
      mode: 0o600,
    });
    const env = {
      WEBHOOK_SECRET: credential(),
      SLACK_TOKEN: `xoxb-${credential()}`,
      SEARCH_PASSWORD: credential(),
      ES_API_KEY: Buffer.from(`key-id:${credential()}`).toString('base64'),
      // The PLAIN user's name with a password that is not its own: the broker refuses it.
      KAFKA_PASSWORD: credential(),
    };
    const headers = () => ({ Authorization: `Bearer ${credential()}`, 'X-Api-Key': credential() });
    const deadLetterPath = path.join(dir, 'echo-dead.jsonl');
    const config = path.join(dir, 'echo.yaml');
    const chat = { stories: false };
    await writeFile(
      config,
      JSON.stringify({
        namespaces: [namespace],
        resources: ['configmaps'],
        deadLetter: deadLetterPath,
        shutdownTimeout: '5s',
        sinks: [
          {
            type: 'webhook',
            name: 'webhook',
            url: echoes.webhook!.url(`/hook/${credential()}?token=${credential()}`),
            headers: headers(),
            secret: `\${WEBHOOK_SECRET}`,
          },
          {
            type: 'webhook',
            name: 'layout',
            url: echoes.layout!.url('/layout'),
            headers: headers(),
            layout: '{ "text": object.name }',
          },
          {
            type: 'webhook',
            name: 'cloudevents',
            url: echoes.cloudevents!.url('/ce'),
            headers: headers(),
            format: 'cloudevents',
            cloudEventsMode: 'binary',
          },
          {
            type: 'slack',
            name: 'slack-webhook',
            webhookUrl: echoes['slack-webhook']!.url(`/services/T0AB12CD3/B0EF45GH6/${credential()}`),
            ...chat,
          },
          {
            type: 'slack',
            name: 'slack-bot',
            token: `\${SLACK_TOKEN}`,
            channel: 'alerts',
            apiUrl: echoes['slack-bot']!.url('/api'),
            ...chat,
          },
          {
            type: 'teams',
            name: 'teams',
            webhookUrl: echoes.teams!.url(
              `/workflows/${credential()}/triggers/manual/paths/invoke?api-version=2016-06-01&sig=${credential()}`,
            ),
            ...chat,
          },
          {
            type: 'discord',
            name: 'discord',
            webhookUrl: echoes.discord!.url(`/api/webhooks/123456789012345678/${credential(60)}`),
            ...chat,
          },
          {
            type: 'mattermost',
            name: 'mattermost',
            webhookUrl: echoes.mattermost!.url(`/hooks/${credential()}`),
            ...chat,
          },
          {
            type: 'google-chat',
            name: 'google-chat',
            webhookUrl: echoes['google-chat']!.url(
              `/v1/spaces/AAAAx1y2z3/messages?key=${credential()}&token=${credential()}`,
            ),
            ...chat,
          },
          { type: 'otlp', name: 'otlp', endpoint: echoes.otlp!.url('/'), headersFile, batch: 1 },
          {
            type: 'opensearch',
            name: 'opensearch',
            url: echoes.opensearch!.url('/'),
            username: 'kubediff',
            password: `\${SEARCH_PASSWORD}`,
            allowPlaintextCredentials: true,
            batch: 1,
          },
          {
            type: 'elasticsearch',
            name: 'elasticsearch',
            url: echoes.elasticsearch!.url('/'),
            apiKey: `\${ES_API_KEY}`,
            headers: { 'X-Api-Key': credential() },
            allowPlaintextCredentials: true,
            batch: 1,
          },
          ...(plain && kafka.listeners.SASL_PLAINTEXT
            ? [
                {
                  type: 'kafka',
                  name: 'kafka',
                  brokers: [kafka.listeners.SASL_PLAINTEXT],
                  topic: testTopic('echo'),
                  sasl: { mechanism: 'PLAIN', username: plain.username, password: `\${KAFKA_PASSWORD}` },
                  allowPlaintextCredentials: true,
                },
              ]
            : []),
        ],
      }),
    );
    const watch = await startWatch(['-c', config, '-o', 'json', '--debug', '--listen', '127.0.0.1:0'], env);
    const [, healthBase] = await watch.waitForStderr(SERVING);
    // One ConfigMap at a time, until every receiver has answered 401, 403, 400 and 500.
    for (
      let n = 0;
      Object.values(echoes).some((receiver) => receiver.requests.length < ECHO_STATUSES.length);
      n++
    ) {
      assert.ok(
        n < 12,
        `receivers still short of four answers: ${Object.entries(echoes)
          .map(([name, r]) => `${name} ${r.requests.length}`)
          .join(', ')}`,
      );
      await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        metadata: { name: `echo-${n}` },
        data: { n: String(n) },
      });
      await watch.waitForEvent(matching({ type: 'ADDED', name: `echo-${n}` }));
      await Promise.all(
        Object.values(echoes).map((receiver) =>
          receiver.waitForRequests(Math.min(n + 1, ECHO_STATUSES.length), 60_000),
        ),
      );
    }
    const served = async (route: string) => {
      const response = await fetch(`${healthBase}${route}`);
      return `${response.status} ${await response.text()}`;
    };
    const metrics = await served('/metrics');
    const readyz = await served('/readyz');
    const result = await watch.stop('SIGTERM', 60_000);
    assert.equal(result.code, 0, result.stderr);

    const sent = Object.values(echoes)
      .flatMap((receiver) =>
        receiver.requests.map((r) => `${r.path}\n${JSON.stringify(r.headers)}\n${r.body}`),
      )
      .join('\n');
    assert.ok(sent.includes(CANARY), 'the receivers were sent the credentials (and echoed them)');
    for (const status of ECHO_STATUSES)
      assert.match(result.stderr, new RegExp(`HTTP ${status} `), `${status} logged`);
    await assertNoLeaks([
      { name: 'stderr (--debug)', read: () => result.stderr, expect: /HTTP 40[013] [^\n]*<credential>/ },
      { name: '/metrics', read: () => metrics, expect: /kubediff_sink_events_total\{sink="webhook"/ },
      { name: '/readyz', read: () => readyz, expect: /^200 / },
      fileSource('dead-letter file', deadLetterPath, /"reason":"(?:[^"\\]|\\.)*<credential>/),
    ]);
    if (plain)
      assert.match(
        result.stderr,
        /kafka: [^\n]*(SASL|authentication|Authentication)/,
        'the broker refused the password',
      );
    await admin.deleteNamespace(namespace);
  });

  it('the PostgreSQL password a server echoes in its error is not printed (issue 36)', async () => {
    const server = await startEchoingPostgres();
    after(() => server.close());
    const password = credentialValue(seededRandom(37), 24);
    const result = await runKubediffToCompletion(
      ['watch', '--kubeconfig', kubeconfig, '--state', `postgres://kubediff@127.0.0.1:${server.port}/db`],
      { env: { PGPASSWORD: password } },
    );
    assert.deepEqual(server.passwords, [password], 'the server was sent the password (and echoed it)');
    assert.equal(result.code, 2, result.stderr);
    assert.match(
      result.stderr,
      /refused the credentials \(password authentication failed: "<credential>" is not the password\)/,
    );
    await assertNoLeaks([{ name: 'stderr', read: () => result.stderr, expect: /<credential>/ }]);
  });

  it('nor by the other commands that open PostgreSQL: history, migrate, ui, why, fleet status (issue 36)', async () => {
    const server = await startEchoingPostgres();
    after(() => server.close());
    const password = credentialValue(seededRandom(39), 24);
    const state = `postgres://kubediff@127.0.0.1:${server.port}/db`;
    const commands = [
      ['history', '--state', state],
      ['migrate', '--state', state],
      ['ui', '--state', state, '--listen', '127.0.0.1:0'],
      ['why', 'pod/web', '-n', 'shop', '--state', state],
      ['why', 'pod/web', '-n', 'shop', '--state', state, '-o', 'json'],
      ['fleet', 'status', '--state', state, '--fleet', 'prod'],
      ['fleet', 'status', '--state', state, '--fleet', 'prod', '-o', 'json'],
    ];
    const results: string[] = [];
    for (const args of commands) {
      const result = await runKubediffToCompletion(args, { env: { PGPASSWORD: password } });
      assert.equal(result.code, 2, `${args[0]}: ${result.stderr}`);
      results.push(`${args[0]}: ${result.stdout}\n${result.stderr}`);
    }
    assert.deepEqual(
      server.passwords,
      commands.map(() => password),
      'each was sent the password (and echoed it)',
    );
    await assertNoLeaks(
      results.map((output, index) => ({
        name: `kubediff ${commands[index]?.slice(0, 2).join(' ')} #${index}`,
        read: () => output,
        expect:
          /refused the credentials \(password authentication failed: "<credential>" is not the password\)/,
      })),
    );
  });

  it('a password in a --state URL is refused without printing it: fleet status, why (issue 36)', async () => {
    const server = await startEchoingPostgres();
    after(() => server.close());
    const password = credentialValue(seededRandom(40), 24);
    const state = `postgres://kubediff:${encodeURIComponent(password)}@127.0.0.1:${server.port}/db`;
    const commands = [
      ['fleet', 'status', '--state', state, '--fleet', 'prod'],
      ['fleet', 'status', '--state', state, '--fleet', 'prod', '-o', 'json'],
      ['why', 'pod/web', '-n', 'shop', '--state', state],
      ['why', 'pod/web', '-n', 'shop', '--state', state, '-o', 'json'],
    ];
    const results: string[] = [];
    for (const args of commands) {
      const result = await runKubediffToCompletion(args);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      results.push(`${result.stdout}\n${result.stderr}`);
    }
    assert.deepEqual(server.passwords, [], 'refused before connecting');
    await assertNoLeaks(
      results.map((output, index) => ({
        name: `kubediff ${commands[index]?.slice(0, 2).join(' ')} #${index}`,
        read: () => output,
        expect: `the --state URL for postgres://127.0.0.1:${server.port}/db carries a password`,
      })),
    );
  });

  it('kubectl apply twice: the last-applied copy of a ConfigMap holds its `redact:` rule (issue 27)', async () => {
    const namespace = await admin.createNamespace('leaks-apply');
    const config = path.join(dir, 'apply.yaml');
    await writeFile(
      config,
      JSON.stringify({
        namespaces: [namespace],
        resources: ['configmaps'],
        redact: [{ path: '/data/password', resources: ['configmaps'] }],
      }),
    );
    const manifest = (password: string) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'db', namespace },
        data: { password, color: 'blue' },
      });
    const apply = async (password: string) => {
      const applied = await kubectl(['--kubeconfig', kubeconfig, 'apply', '-f', '-'], {
        input: manifest(password),
      });
      assert.equal(applied.code, 0, applied.stderr);
    };
    const json = await startWatch(['-c', config, '-o', 'json']);
    const pretty = await startWatch(['-c', config, '-o', 'pretty']);
    await apply(`${CANARY}hunter2`);
    await apply(`${CANARY}hunter3`);
    const updated = await json.waitForEvent(matching({ type: 'UPDATED', name: 'db' }));
    await pretty.waitForStdout(`UPDATED configmaps ${namespace}/db`);
    const jsonResult = await json.stop('SIGTERM');
    const prettyResult = await pretty.stop('SIGTERM');
    const lastApplied = updated.changes?.find(
      (change) => change.path === '/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration',
    );
    assert.ok(lastApplied, `the copy's change is reported: ${JSON.stringify(updated.changes)}`);
    const copy = (text: unknown) => JSON.parse(String(text)) as { data: Record<string, string> };
    assert.match(copy(lastApplied.from).data.password!, /^<redacted sha256:[0-9a-f]{8}>$/);
    assert.match(copy(lastApplied.to).data.password!, /^<redacted sha256:[0-9a-f]{8}>$/);
    assert.notEqual(copy(lastApplied.from).data.password, copy(lastApplied.to).data.password);
    assert.equal(copy(lastApplied.to).data.color, 'blue');
    await assertNoLeaks([
      { name: 'stdout (json)', read: () => jsonResult.stdout, expect: /<redacted sha256:/ },
      { name: 'stdout (pretty)', read: () => prettyResult.stdout, expect: /<redacted sha256:/ },
      { name: 'stderr', read: () => jsonResult.stderr + prettyResult.stderr, expect: READY },
    ]);
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
