// Property test over a generated corpus (test/helpers/secret-corpus.ts): seeded random Secrets, ConfigMaps
// and custom resources with `redact:` rules (and copies of themselves in their annotations), random edits, keys with '/', '~' and unicode, huge values and
// base64. They go through the real pipeline in-process, the way `kubediff watch --state` runs it: informers
// (LIST items without apiVersion/kind, watch events, a relist after a gap, a catch-up from the state file
// after a restart), normalization, the event builder, the state recorder; and every event through every
// renderer: JSON lines, pretty (with and without color), --explain lines, Slack, Teams, Discord, Mattermost
// and Google Chat messages and digests, OTLP log records (attributes and body), CloudEvents (structured, and
// the binary mode's headers), a webhook layout's body, digest payloads, the dead-letter file; then the state
// database's bytes (and -wal), and `kubediff history` as JSON and pretty. Every write is also shown to the
// admission webhook's path as the API server sends it (an AdmissionReview carrying the whole object and the
// old one): the records the join keeps, what a replica posts to its peers, and the events it names. No secret
// value, nor its base64, may appear in any of them (test/helpers/leak-check.ts).
// Then an OUTCOME, from the outcome engine fed a rollout whose pod reads a Secret and fails with messages
// that quote its value (the kubelet's, a probe's): its JSON line, pretty lines, every chat platform's
// follow-up, a Slack bot's reply in the change's thread and its chat.update of the change's message.
// Then configured credentials: every HTTP sink type, through the real setup, against loopback receivers
// that answer 401, 403, 400 and 500 with the whole request they got; none may reach the log or a dead letter.
// The end-to-end half, with the real CLI against the real API server, is test/integration/redaction-leaks.

import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { runHistory } from '../../src/cli/history.ts';
import { redactPathsFor } from '../../src/config/redaction.ts';
import { DEFAULT_IGNORED_PATHS, PathMatcher } from '../../src/diff/ignore.ts';
import { Normalizer } from '../../src/diff/normalize.ts';
import { Redactor } from '../../src/diff/redact.ts';
import { DiscoveryResolver } from '../../src/events/discovery-resolver.ts';
import { type ChangeEvent, isChange, type OutcomeEvent } from '../../src/events/event.ts';
import { explainLine } from '../../src/events/explain.ts';
import { compileFilter } from '../../src/events/filter.ts';
import { OutcomeEngine } from '../../src/events/outcomes/outcome-engine.ts';
import { OwnerResolver, ownerStage } from '../../src/events/owners.ts';
import { Pipeline } from '../../src/events/pipeline.ts';
import { UsedByTracker } from '../../src/events/used-by/used-by-tracker.ts';
import { Informer } from '../../src/informer/informer.ts';
import type { ListerWatcher } from '../../src/kube/lister-watcher.ts';
import { type JsonObject, type KubeObject, qualifiedName, type ResourceType } from '../../src/kube/types.ts';
import { renderBatch } from '../../src/sinks/chat/core/chat.ts';
import { renderSlackMessage } from '../../src/sinks/chat/slack/slack-format.ts';
import { DeadLetterFile } from '../../src/sinks/core/dead-letter.ts';
import { Digest } from '../../src/sinks/core/digest.ts';
import { prettyRenderer } from '../../src/sinks/core/pretty.ts';
import { createSinks, type SinkSpec } from '../../src/sinks/core/setup.ts';
import { renderJsonLine } from '../../src/sinks/core/stream-output.ts';
import { FileSink } from '../../src/sinks/file/file-sink.ts';
import {
  binaryHeaders,
  eventAttributes,
  structuredCloudEvent,
} from '../../src/sinks/http/webhook/cloudevents.ts';
import { prepareLayout, renderLayout } from '../../src/sinks/http/webhook/layout.ts';
import { eventRecord } from '../../src/sinks/logs/otlp/records.ts';
import { StateRecorder } from '../../src/state/recorder.ts';
import { SqliteDatabase } from '../../src/state/sqlite-database.ts';
import { SqliteStateStore } from '../../src/state/sqlite-store.ts';
import { EventFailures } from '../../src/util/event-failures.ts';
import { AdmissionDigests } from '../../src/who/admission/admission-digests.ts';
import { AdmissionSource } from '../../src/who/admission/admission-match.ts';
import { readAdmissionReview } from '../../src/who/admission/admission-review.ts';
import { admissionRecordOf } from '../../src/who/admission/admission-server.ts';
import { encodePeerRecords } from '../../src/who/peers/peer-records.ts';
import { WhoJoin } from '../../src/who/who-join.ts';
import { CHAT_PLATFORMS, type ChatPlatformName } from '../helpers/chat-platforms.ts';
import { sampleEvent } from '../helpers/events.ts';
import { FakeSlackApi } from '../helpers/fake-slack-api.ts';
import { readFileSinkLines } from '../helpers/file-sink-files.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import {
  assertNoLeaks,
  CANARY,
  credentialValue,
  fileSource,
  type LeakSource,
  receiverSource,
  secretValue,
} from '../helpers/leak-check.ts';
import { degradedRollout, recorded } from '../helpers/outcome-fixtures.ts';
import { seededRandom } from '../helpers/random-json.ts';
import { configmaps, secrets } from '../helpers/resource-types.ts';
import { CORPUS_REDACT_RULES, type CorpusKind, SecretCorpus, VAULT_TYPE } from '../helpers/secret-corpus.ts';
import { memoryLog } from '../helpers/sink-test.ts';

const CHAT_PLATFORM_NAMES = Object.keys(CHAT_PLATFORMS) as ChatPlatformName[];
const TYPES: Record<CorpusKind, ResourceType> = { Secret: secrets, ConfigMap: configmaps, Vault: VAULT_TYPE };
/** The key holds the canary too: if it ever reached an output, the scan would find it. */
const KEY = `${CANARY}redaction-key-0123456789`;

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

interface Tracked {
  kind: CorpusKind;
  body: JsonObject;
  name: string;
  uid: string;
  resourceVersion: string;
}

interface CorpusRun {
  objects: number;
  versions: number;
  events: ChangeEvent[];
  secretValues: number;
  sources: LeakSource[];
}

/** Drives one corpus through the pipeline; returns what came out of it, as leak sources. */
async function runCorpus(seed: number, perKind: number, rounds: number, key?: string): Promise<CorpusRun> {
  const random = seededRandom(seed);
  const corpus = new SecretCorpus({ seed, apiValid: false, hugeEvery: 150 }, random);
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-leaks-'));
  dirs.push(dir);
  const statePath = path.join(dir, 'state.db');
  const deadLetterPath = path.join(dir, 'dead.jsonl');
  const log = memoryLog();
  const database = SqliteDatabase.open(statePath);
  const recorder = await StateRecorder.open({
    store: new SqliteStateStore(database),
    log,
    signature: 'leaks',
  });
  recorder.attach({ finished: () => [] }, () => []);
  const deadLetters = DeadLetterFile.open(deadLetterPath, log);
  // The file sink, rotating at 1 MiB: its live file and the gzipped rotated ones are outputs too.
  const fileSinkPath = path.join(dir, 'file-sink', 'events.jsonl');
  const fileSink = await FileSink.create({
    name: 'file',
    path: fileSinkPath,
    maxSize: 1024 * 1024,
    maxFiles: 1000,
    // The corpus is emitted in one synchronous burst: room for all of it, so that every event is a line.
    queue: { capacity: 1_000_000, maxBytes: 1024 ** 3 },
    log,
  });

  const resolver = new DiscoveryResolver();
  resolver.update(Object.values(TYPES));
  const normalizer = new Normalizer({
    ignore: new PathMatcher(DEFAULT_IGNORED_PATHS),
    redactor: new Redactor(key),
    redactPaths: redactPathsFor(CORPUS_REDACT_RULES, resolver.resolve),
  });
  const explainFilter = compileFilter(
    { ignore: [{ path: '/data/password', resources: ['cm'] }], only: ['/data', '/spec', '/metadata'] },
    { resolve: resolver.resolve },
  );

  // What every output path makes of the events, per path.
  const out: Record<string, string[]> = {
    json: [],
    prettyColor: [],
    pretty: [],
    explain: [],
    slack: [],
    digestPayload: [],
    admissionRecords: [],
    peerBodies: [],
    otlpRecord: [],
    cloudEvent: [],
    cloudEventHeaders: [],
    layout: [],
    ...Object.fromEntries(CHAT_PLATFORM_NAMES.map((name) => [name, []])),
  };
  const chats = CHAT_PLATFORM_NAMES.map((name) => ({
    name,
    platform: CHAT_PLATFORMS[name].create('https://chat.example.invalid/hook'),
  }));
  // Every chat renderer, for one event alone, a few and a digest (as Slack's below).
  const renderChats = (digest: Digest) => {
    for (const chat of chats) out[chat.name]!.push(JSON.stringify(renderBatch(chat.platform, digest).body));
  };
  const renderColor = prettyRenderer({ color: true });
  const renderPlain = prettyRenderer({ color: false });
  const events: ChangeEvent[] = [];
  let batch = new Digest({ retain: 5 });
  let burst = new Digest({
    retain: 2,
    onEvict: (event) => deadLetters.writeEvents('slack', 'evicted', [event]),
  });
  const layout = await prepareLayout(
    '{ "text": type & " " & object.name & " " & $string(changes), "by": by }',
  );
  // Rendered one at a time after the run, as the sink does (evaluations at once would share the time limit).
  const layoutInputs: unknown[] = [];
  const emit = (event: ChangeEvent) => {
    events.push(event);
    out.json!.push(renderJsonLine(event));
    fileSink.deliver(event);
    out.otlpRecord!.push(JSON.stringify(eventRecord(event)));
    out.cloudEvent!.push(structuredCloudEvent(eventAttributes(event), renderJsonLine(event)));
    out.cloudEventHeaders!.push(JSON.stringify(binaryHeaders(eventAttributes(event))));
    layoutInputs.push(JSON.parse(renderJsonLine(event)));
    out.prettyColor!.push(renderColor(event));
    out.pretty!.push(renderPlain(event));
    out.explain!.push(explainLine(event, 'webhook audit', explainFilter.evaluate(event)));
    const alone = new Digest({ retain: 1 });
    alone.add(event);
    out.slack!.push(JSON.stringify(renderSlackMessage(alone)));
    renderChats(alone);
    batch.add(event);
    if (batch.count === 5) {
      out.slack!.push(JSON.stringify(renderSlackMessage(batch)));
      renderChats(batch);
      batch = new Digest({ retain: 5 });
    }
    burst.add(event);
    if (burst.count === 23) {
      out.slack!.push(JSON.stringify(renderSlackMessage(burst)));
      renderChats(burst);
      out.digestPayload!.push(JSON.stringify(burst.toPayload()));
      deadLetters.writeDigest('webhook', 'refused (400)', burst.toPayload());
      burst = new Digest({
        retain: 2,
        onEvict: (evicted) => deadLetters.writeEvents('slack', 'evicted', [evicted]),
      });
    }
    if (events.length % 3 === 0) deadLetters.writeEvents('webhook', 'refused (400)', [event]);
  };
  // The admission webhook's path: each review read, digested, kept, posted to a peer, joined.
  const digests = new AdmissionDigests(normalizer);
  digests.update(Object.values(TYPES));
  const admission = new AdmissionSource({ maxRecords: 1_000_000, retainMs: 3_600_000, log });
  const join = new WhoJoin({ waitMs: 0, maxPending: 10, log }, [admission]);
  let reviews = 0;
  const review = (operation: string, object: Tracked, served: KubeObject | null, old: KubeObject | null) => {
    const type = TYPES[object.kind];
    const body = JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: `review-${++reviews}`,
        kind: { group: type.group, version: type.version, kind: type.kind },
        resource: { group: type.group, version: type.version, resource: type.resource },
        namespace: 'leak',
        name: object.name,
        operation,
        userInfo: { username: 'alice', groups: ['system:authenticated'] },
        object: served,
        oldObject: old,
        dryRun: false,
      },
    });
    const reading = readAdmissionReview(body);
    const verdict = 'write' in reading ? digests.of(reading.write) : undefined;
    if (!('write' in reading) || !verdict) return;
    const record = admissionRecordOf(reading.requestUID, reading.write, verdict, 0);
    out.admissionRecords!.push(JSON.stringify(record));
    out.peerBodies!.push(encodePeerRecords({ audit: [], admission: [record] }));
    join.offer(admission, [record]);
  };
  // The pipeline as `watch` builds it, its delivery standing in for the sinks; the recorder observes it,
  // and the "used by" index (whose usedBy names the Secrets' users and keys) too.
  const owners = new OwnerResolver();
  const usedBy = new UsedByTracker({ owners, log });
  const pipeline = new Pipeline({
    normalizer,
    rules: [ownerStage(owners), usedBy.stage(), join],
    handover: [],
    delivery: {
      deliver: (event) => {
        if (isChange(event)) emit(event);
        return [];
      },
      accepted: () => [],
    },
    observers: [usedBy, recorder],
    failures: new EventFailures(log),
  });
  const handler = pipeline.source('leaks');

  let rv = 1;
  let uid = 0;
  let versions = 0;
  const tracked: Tracked[] = [];
  const asServed = (object: Tracked, listItem: boolean): KubeObject => {
    const { metadata, ...rest } = object.body as { metadata: JsonObject };
    const served = {
      // LIST items carry no apiVersion/kind of their own; redaction must not need them.
      ...(listItem ? {} : { apiVersion: TYPES[object.kind].version, kind: object.kind }),
      metadata: {
        ...metadata,
        name: object.name,
        namespace: 'leak',
        uid: object.uid,
        resourceVersion: object.resourceVersion,
        managedFields: [{ manager: 'kubectl', fieldsV1: { 'f:data': { 'f:password': {} } } }],
      },
      ...rest,
    };
    versions++;
    return served as unknown as KubeObject;
  };
  const change = (object: Tracked) => {
    object.body = corpus.edit(object.kind, object.body);
    object.resourceVersion = String(++rv);
  };

  const kinds: CorpusKind[] = ['Secret', 'ConfigMap', 'Vault'];
  const informers = new Map<CorpusKind, Informer>();
  const start = (kind: CorpusKind, preload?: boolean) => {
    const type = TYPES[kind];
    const informer = new Informer(
      {} as ListerWatcher,
      {
        type,
        normalize: (t, object) => pipeline.normalize(t, object, 'leaks'),
        initialList: 'silent',
        ...(preload ? { preload: database.objects(qualifiedName(type)) } : {}),
      },
      handler,
    );
    informers.set(kind, informer);
    return informer;
  };
  const list = (kind: CorpusKind) => {
    const informer = informers.get(kind)!;
    informer.listStarted();
    informer.listPage(
      tracked.filter((object) => object.kind === kind).map((object) => asServed(object, true)),
    );
    informer.listCompleted(String(rv));
  };

  // The first LIST: a silent baseline, recorded.
  for (const kind of kinds) {
    for (let n = 0; n < perKind; n++) {
      tracked.push({
        kind,
        body: corpus.create(kind),
        name: `${kind.toLowerCase()}-${n}`,
        uid: `uid-${++uid}`,
        resourceVersion: String(++rv),
      });
    }
    start(kind);
    list(kind);
  }
  // Pods that read the Secrets and ConfigMaps every way (each key by env, envFrom, a volume), so their
  // events carry usedBy with names and keys: a value must reach no output through it either.
  const pods = new Informer(
    {} as ListerWatcher,
    { type: PODS, normalize: (t, object) => pipeline.normalize(t, object, 'leaks'), initialList: 'silent' },
    handler,
  );
  pods.stateChanged({ phase: 'listing' });
  pods.listStarted();
  pods.listPage(
    tracked
      .filter((object) => object.kind !== 'Vault' && corpus.int(3) === 0)
      .map((object, index) => readerOf(object, index)),
  );
  pods.listCompleted(String(++rv));
  pods.stateChanged({ phase: 'watching' });
  for (let round = 0; round < rounds; round++) {
    for (const object of tracked) {
      const informer = informers.get(object.kind)!;
      const dice = corpus.int(100);
      if (dice < 70) {
        const old = asServed(object, false);
        change(object);
        const served = asServed(object, false);
        review('UPDATE', object, served, old);
        informer.watchEvent('MODIFIED', served);
      } else if (dice < 74) {
        // Deleted, then created again under the same name.
        const last = asServed(object, false);
        review('DELETE', object, null, last);
        informer.watchEvent('DELETED', last);
        object.uid = `uid-${++uid}`;
        object.body = corpus.create(object.kind);
        object.resourceVersion = String(++rv);
        const created = asServed(object, false);
        review('CREATE', object, created, null);
        informer.watchEvent('ADDED', created);
      }
    }
    if (round === 1) {
      // A gap (410 Gone): changes made meanwhile are found by a relist, offline.
      for (const object of tracked) if (corpus.int(2) === 0) change(object);
      for (const kind of kinds) list(kind);
    }
    await recorder.flush();
  }
  // A restart: changes made while stopped, found by the first LIST against the recorded state.
  await recorder.flush(true);
  for (const object of tracked) if (corpus.int(2) === 0) change(object);
  for (const kind of kinds) {
    start(kind, true);
    list(kind);
  }
  await recorder.flush(true);
  // The state file as it is while running (WAL not yet checkpointed), then closed.
  const walWhileRunning = fileSource('state -wal while running', `${statePath}-wal`, /<redacted/);
  const walBytes = await walWhileRunning.read();
  await recorder.close();
  deadLetters.close();
  join.close();
  const fileSinkReport = await fileSink.close(60_000);
  assert.equal(fileSinkReport.stats.delivered, events.length, 'the file sink wrote every event');
  assert.ok(fileSink.fileStats().rotations > 0, 'the file sink rotated');

  const history = async (format: 'json' | 'pretty') => {
    const chunks: string[] = [];
    const stdout = new Writable({
      write(chunk, _encoding, done) {
        chunks.push(String(chunk));
        done();
      },
    });
    await runHistory(undefined, { state: statePath, output: format }, { stdout, isTTY: false });
    return chunks.join('');
  };
  // Slack, Google Chat and the markdown platforms escape '<' and '>', so the marker is matched without them.
  const marker = key ? /redacted hmac:[0-9a-f]{8}/ : /redacted sha256:[0-9a-f]{8}/;
  for (const input of layoutInputs) out.layout!.push(await renderLayout(layout, input));
  const sources: LeakSource[] = [
    ...Object.entries(out).map(([name, texts]) => ({
      name,
      read: () => texts.join(''),
      // --explain names events and rules, never values; the records of reviews name writes, never values;
      // the CloudEvents headers carry attributes only.
      expect:
        name === 'explain'
          ? /explain: UPDATED secrets leak\/secret-\d+ /
          : name === 'admissionRecords' || name === 'peerBodies'
            ? /"reviewUID":"review-\d+"/
            : name === 'cloudEventHeaders'
              ? /"ce-subject":"\/api\/v1\/namespaces\/leak\/secrets\//
              : marker,
    })),
    fileSource('dead-letter file', deadLetterPath, marker),
    {
      name: 'file sink (live file and gunzipped rotated files)',
      read: async () => (await readFileSinkLines(fileSinkPath)).join('\n'),
      expect: marker,
    },
    fileSource('state database', statePath, marker),
    { name: 'state -wal while running', read: () => walBytes, expect: /<redacted/ },
    fileSource('state -wal', `${statePath}-wal`),
    { name: 'history -o json', read: () => history('json'), expect: marker },
    { name: 'history -o pretty', read: () => history('pretty'), expect: marker },
    { name: 'logs', read: () => log.lines.join('\n') },
  ];
  return { objects: tracked.length, versions, events, secretValues: corpus.secretCount, sources };
}

const PODS: ResourceType = {
  ...configmaps,
  resource: 'pods',
  kind: 'Pod',
  shortNames: ['po'],
  singularName: 'pod',
};

/** A running pod that reads `object` (a Secret or ConfigMap of the corpus) by each of its keys, by envFrom and as a volume. */
function readerOf(object: Tracked, index: number): KubeObject {
  const secret = object.kind === 'Secret';
  const data = (object.body.data ?? {}) as JsonObject;
  const ref = (key: string) =>
    secret ? { secretKeyRef: { name: object.name, key } } : { configMapKeyRef: { name: object.name, key } };
  return {
    metadata: {
      name: `reader-${index}`,
      namespace: 'leak',
      uid: `reader-uid-${index}`,
      resourceVersion: '1',
    },
    spec: {
      containers: [
        {
          name: 'app',
          env: Object.keys(data).map((key, n) => ({ name: `V${n}`, valueFrom: ref(key) })),
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
    status: {
      phase: 'Running',
      containerStatuses: [{ name: 'app', state: { running: { startedAt: '2026-01-01T00:00:00Z' } } }],
    },
  } as unknown as KubeObject;
}

/** The events show that things changed (markers differ) and what is not secret (visible values). */
function assertVisibleChanges(events: readonly ChangeEvent[], marker: RegExp): void {
  const changes = events.flatMap((event) => event.changes ?? []);
  const at = (prefix: string) => changes.filter((change) => change.path.startsWith(prefix));
  for (const prefix of [
    '/data/',
    '/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration',
    '/spec/credentials',
    '/spec/backends/',
    '/spec/a~1b~0c',
    '/binaryData',
  ]) {
    const redacted = at(prefix).filter((change) => marker.test(String(change.to ?? change.from)));
    assert.ok(redacted.length > 0, `some change at ${prefix} shows a marker`);
  }
  for (const prefix of ['/metadata/annotations/meta.helm.sh~1release-name', '/data/color', '/spec/visible']) {
    assert.ok(
      at(prefix).some((change) => String(change.to).startsWith('visible-')),
      `a change at ${prefix} is shown as it is`,
    );
  }
  assert.ok(
    events.some((event) => event.offline && event.type === 'UPDATED'),
    'relist and catch-up report',
  );
  // A ConfigMap's or a custom resource's copies in its annotations: redacted inside, the rest shown.
  const copyChanges = events.flatMap((event) =>
    event.object.resource === 'secrets'
      ? []
      : (event.changes ?? []).filter((change) => change.path.startsWith('/metadata/annotations/')),
  );
  const markerInside = new RegExp(marker.source.replace(/^\^|\$$/g, ''));
  for (const name of ['kubectl.kubernetes.io~1last-applied-configuration', 'backup.example.io~1object']) {
    assert.ok(
      copyChanges.some(
        (change) =>
          change.path.endsWith(`/${name}`) &&
          markerInside.test(String(change.to)) &&
          String(change.to).includes('visible-'),
      ),
      `a change of the copy in ${name} shows markers inside it, and its visible values`,
    );
  }
  assert.ok(
    copyChanges.some(
      (change) => change.path.endsWith('/kapp.k14s.io~1original') && marker.test(String(change.to)),
    ),
    'a copy that cannot be read is hashed whole',
  );
}

/**
 * The reviews named the live changes exactly: the digest of a reviewed object, normalized (Secrets and
 * `redact:` paths hashed), is the stored object's.
 */
function assertNamedByReviews(events: readonly ChangeEvent[]): void {
  const live = events.filter((event) => !event.offline);
  const named = live.filter((event) => event.by?.user?.username === 'alice' && event.by.match === 'exact');
  assert.ok(live.length > 0);
  assert.equal(named.length, live.length, 'every live change named by its review');
}

describe('no secret value reaches any output (in-process corpus)', () => {
  it('plain SHA-256 markers: 3,000 objects, 5 rounds of random edits, a relist and a restart', async () => {
    const run = await runCorpus(11, 1_000, 5);
    const report = await assertNoLeaks(run.sources);
    assertVisibleChanges(run.events, /^<redacted sha256:[0-9a-f]{8}>$/);
    assertNamedByReviews(run.events);
    // usedBy is among what was scanned: Secret events name their readers and the keys they read.
    const named = run.events.filter(
      (event) => event.object.kind === 'Secret' && event.usedBy?.workloads.length,
    );
    assert.ok(named.length > 100, `Secret events with usedBy: ${named.length}`);
    assert.ok(
      named.some((event) =>
        event.usedBy?.workloads.some((w) => w.via.some((via) => via.type === 'env' && via.key)),
      ),
    );
    assert.ok(run.versions > 15_000, `versions: ${run.versions}`);
    const scanned = Object.values(report.scanned).reduce((sum, size) => sum + size, 0);
    console.log(
      `corpus: ${run.objects} objects, ${run.versions} versions, ${run.secretValues} secret values, ` +
        `${run.events.length} events, ${(scanned / 1e6).toFixed(1)} MB of output scanned`,
    );
  });

  it('keyed HMAC markers: no SHA-256 marker anywhere, and the key itself never shown', async () => {
    const run = await runCorpus(12, 200, 3, KEY);
    await assertNoLeaks(run.sources);
    console.log(
      `corpus (HMAC): ${run.objects} objects, ${run.versions} versions, ${run.secretValues} secret values, ${run.events.length} events`,
    );
    assertVisibleChanges(run.events, /^<redacted hmac:[0-9a-f]{8}>$/);
    assertNamedByReviews(run.events);
    for (const source of run.sources) {
      const content = (await source.read()) ?? '';
      const text = typeof content === 'string' ? content : Buffer.from(content).toString('latin1');
      assert.equal(text.includes('<redacted sha256:'), false, `${source.name} holds a plain hash`);
    }
  });
});

/** What the echoing receivers answer: each sink type meets each of them. */
const ECHO_STATUSES = [401, 403, 400, 500] as const;

describe('no configured credential reaches a log line or a dead letter, whatever a receiver echoes (in-process)', () => {
  it('every HTTP sink type, its receiver echoing the whole request (method, path, headers, body) with 401, 403, 400 and 500', async () => {
    const random = seededRandom(36);
    const credential = (length = 24) => credentialValue(random, length);
    const receivers: HttpReceiver[] = [];
    after(() => Promise.all(receivers.map((receiver) => receiver.close())));
    /** A receiver that refuses every request with `status`, its answer the request itself (JSON, or text). */
    const echo = async (status: number) => {
      const receiver = await HttpReceiver.start({
        respond: (request) => ({
          status,
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
    const quick = { retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 20 }, timeoutMs: 5_000 };
    const chat = { ...quick, minIntervalMs: 0 };
    const headers = () => ({
      authorization: `Bearer ${credential()}`,
      'x-api-key': credential(),
      'x-token': credential(8),
    });
    /** One sink of each HTTP type, every credential it takes set, against receivers answering `status`. */
    const specsFor = async (status: number): Promise<SinkSpec[]> => {
      const at = async (path: string) => (await echo(status)).url(path);
      return [
        {
          type: 'webhook',
          url: await at(`/hook/${credential()}?token=${credential()}`),
          headers: headers(),
          secret: credential(),
          ...quick,
        },
        {
          type: 'webhook',
          url: await at('/layout'),
          headers: headers(),
          layout: '{ "text": object.name }',
          ...quick,
        },
        {
          type: 'webhook',
          url: await at('/ce'),
          headers: headers(),
          format: 'cloudevents',
          cloudEventsMode: 'binary',
          ...quick,
        },
        { type: 'slack', webhookUrl: await at(`/services/T0AB12CD3/B0EF45GH6/${credential()}`), ...chat },
        {
          type: 'slack',
          token: `xoxb-${credential()}`,
          channel: 'alerts',
          apiUrl: await at('/api'),
          ...chat,
        },
        {
          type: 'teams',
          webhookUrl: await at(
            `/workflows/${credential()}/triggers/manual/paths/invoke?api-version=2016-06-01&sig=${credential()}`,
          ),
          ...chat,
        },
        {
          type: 'discord',
          webhookUrl: await at(`/api/webhooks/123456789012345678/${credential(60)}`),
          ...chat,
        },
        { type: 'mattermost', webhookUrl: await at(`/hooks/${credential()}`), ...chat },
        {
          type: 'google-chat',
          webhookUrl: await at(`/v1/spaces/AAAAx1y2z3/messages?key=${credential()}&token=${credential()}`),
          ...chat,
        },
        { type: 'otlp', endpoint: await at('/'), headers: headers(), batchMaxEvents: 1, ...quick },
        {
          type: 'opensearch',
          url: await at('/'),
          auth: { username: 'kubediff', password: credential() },
          batchMaxEvents: 1,
          ...quick,
        },
        {
          type: 'elasticsearch',
          url: await at('/'),
          auth: { apiKey: Buffer.from(`id:${credential()}`).toString('base64') },
          headers: headers(),
          batchMaxEvents: 1,
          ...quick,
        },
      ];
    };
    const specs = (await Promise.all(ECHO_STATUSES.map(specsFor))).flat();
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-credential-leaks-'));
    dirs.push(dir);
    const deadLetterPath = path.join(dir, 'dead.jsonl');
    const log = memoryLog();
    const sinks = await createSinks(specs, {
      log,
      stdout: new Writable({ write: (_chunk, _encoding, done) => done() }),
      deadLetterFile: deadLetterPath,
      userAgent: 'kubediff/test',
    });
    for (let n = 0; n < 3; n++)
      sinks.router.deliver(sampleEvent({ id: `u-${n}:${n}`, object: { name: `cm-${n}` } }));
    await sinks.router.close(60_000);
    for (const file of sinks.deadLetterFiles) file.close();

    assert.deepEqual(
      receivers.filter((receiver) => receiver.requests.length === 0).map((receiver) => receiver.url('/')),
      [],
      'every sink sent requests',
    );
    const sent = receivers.flatMap((receiver) =>
      receiver.requests.map(
        (request) => `${request.path} ${JSON.stringify(request.headers)} ${request.body}`,
      ),
    );
    assert.ok(sent.join('\n').includes(CANARY), 'the credentials were sent, and echoed');
    const logged = log.lines.join('\n');
    for (const status of ECHO_STATUSES)
      assert.match(logged, new RegExp(`HTTP ${status} `), `${status} logged`);
    await assertNoLeaks([
      { name: 'log lines', read: () => logged, expect: /HTTP 40[013] .*<credential>/ },
      fileSource('dead-letter file', deadLetterPath, /"reason":"(?:[^"\\]|\\.)*<credential>/),
    ]);
  });
});

describe('no configured credential reaches a sink’s name or what a receiver rejects (in-process)', () => {
  it('a sink named after its secret URL, beside a sink whose own credentials do not hold it; an OTLP partial success quoting the request', async () => {
    const random = seededRandom(38);
    const credential = (length = 24) => credentialValue(random, length);
    const receivers: HttpReceiver[] = [];
    after(() => Promise.all(receivers.map((receiver) => receiver.close())));
    const headers = { authorization: `Bearer ${credential()}`, 'x-api-key': credential() };
    // A collector that takes the request but rejects its records, saying why with the request's headers.
    const collector = await HttpReceiver.start({
      respond: (request) => ({
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          partialSuccess: {
            rejectedLogRecords: '1',
            errorMessage: `rejected for ${JSON.stringify(request.headers)}`,
          },
        }),
      }),
    });
    receivers.push(collector);
    // A receiver that refuses every request with 400 (not retried).
    const refusing = await HttpReceiver.start({ defaultReply: { status: 400, body: 'no' } });
    receivers.push(refusing);
    const hookSecret = credential();
    const quick = { retry: { maxAttempts: 1, initialDelayMs: 10, maxDelayMs: 20 }, timeoutMs: 5_000 };
    const specs: SinkSpec[] = [
      // Named with the secret part of the other sink's URL: the credentials of this sink do not hold it.
      { type: 'webhook', name: `hook /named/${hookSecret}`, url: refusing.url('/plain'), ...quick },
      { type: 'webhook', url: refusing.url(`/named/${hookSecret}`), ...quick },
      {
        type: 'otlp',
        endpoint: collector.url('/'),
        protocol: 'http/json',
        headers,
        batchMaxEvents: 1,
        ...quick,
      },
    ];
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-credential-names-'));
    dirs.push(dir);
    const deadLetterPath = path.join(dir, 'dead.jsonl');
    const log = memoryLog();
    const sinks = await createSinks(specs, {
      log,
      stdout: new Writable({ write: (_chunk, _encoding, done) => done() }),
      deadLetterFile: deadLetterPath,
      userAgent: 'kubediff/test',
    });
    const names = sinks.router.sinks.map((sink) => sink.name);
    sinks.router.deliver(sampleEvent({ id: 'u-1:1', object: { name: 'cm-1' } }));
    const reports = await sinks.router.close(60_000);
    for (const file of sinks.deadLetterFiles) file.close();

    assert.equal(refusing.requests.length, 2, 'both webhooks sent the event');
    assert.ok(
      collector.requests.some((request) => JSON.stringify(request.headers).includes(CANARY)),
      'the collector was sent the credentials (and quoted them)',
    );
    const logged = log.lines.join('\n');
    await assertNoLeaks([
      {
        name: 'sink names (logs, /metrics, /readyz)',
        read: () => names.join('\n'),
        expect: 'hook <credential>',
      },
      { name: 'shutdown reports', read: () => JSON.stringify(reports), expect: '"name":"hook <credential>"' },
      {
        name: 'the named sink’s log line',
        read: () => logged,
        expect: /^warn: hook <credential>: HTTP 400 /m,
      },
      {
        name: 'log lines',
        read: () => logged,
        expect: /rejected 1 event of these 1 event without saying which: rejected for .*<credential>/,
      },
      fileSource('dead-letter file: the named sink', deadLetterPath, '"sink":"hook <credential>"'),
      fileSource(
        'dead-letter file: the rejected batch',
        deadLetterPath,
        /"reason":"the receiver rejected [^\n]*<credential>/,
      ),
    ]);
  });
});

/** The types an OUTCOME's rollout is read from, as the pipeline hands them to the outcome engine. */
const workloadType = (group: string, resource: string, kind: string): ResourceType => ({
  ...configmaps,
  group,
  resource,
  kind,
  shortNames: [],
  singularName: kind.toLowerCase(),
});
const DEPLOYMENTS = workloadType('apps', 'deployments', 'Deployment');
const REPLICASETS = workloadType('apps', 'replicasets', 'ReplicaSet');

describe('no secret value reaches an OUTCOME (in-process, issue 38)', () => {
  it('a rollout whose pod fails quoting the Secret its command reads (waiting message, Failed and Unhealthy Warnings): JSON, pretty, every chat follow-up, the Slack thread reply and chat.update', async () => {
    const random = seededRandom(40);
    const value = secretValue(random, 40);
    const clock = { now: Date.parse('2026-12-01T10:00:00.000Z') };
    const engine = new OutcomeEngine({ log: memoryLog(), now: () => clock.now, timeoutMs: 600_000 });
    const reported = new Promise<OutcomeEvent>((resolve) => engine.reportTo(resolve));
    engine.synced(undefined);
    const deployment = (generation: number, observed: number, revision: string) => {
      const object = recorded('deployment-healthy');
      object.metadata = {
        ...object.metadata,
        name: 'web',
        namespace: 'shop',
        uid: 'web-uid',
        generation,
        annotations: { 'deployment.kubernetes.io/revision': revision },
      };
      object.status = {
        observedGeneration: observed,
        replicas: 2,
        updatedReplicas: observed === 1 ? 2 : 1,
        readyReplicas: observed === 1 ? 2 : 0,
        availableReplicas: observed === 1 ? 2 : 0,
        conditions: [],
      };
      return object;
    };
    const replicaSet = (uid: string, revision: string) => {
      const object = recorded('replicaset');
      object.metadata = {
        ...object.metadata,
        name: `web-${uid}`,
        uid,
        annotations: { 'deployment.kubernetes.io/revision': revision },
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'web-uid', controller: true },
        ],
      };
      return object;
    };
    /** A crash-looping pod of rs2 (`waiting` its container's state); with `readsSecret`, its command is $(PASSWORD) from the Secret `db`. */
    const pod = (name: string, waiting: JsonObject, readsSecret: boolean) => {
      const object = recorded('pod-oom-crashloop') as KubeObject & { spec: JsonObject; status: JsonObject };
      object.metadata = {
        ...object.metadata,
        name,
        uid: `${name}-uid`,
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-rs2', uid: 'rs2', controller: true },
        ],
      };
      const [container] = object.spec.containers as JsonObject[];
      if (readsSecret) {
        container!.command = ['$(PASSWORD)'];
        container!.env = [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }];
      }
      const [status] = object.status.containerStatuses as JsonObject[];
      status!.state = { waiting };
      return object;
    };
    const warning = (uid: string, involved: KubeObject, reason: string, message: string) =>
      ({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: uid, namespace: 'shop', uid, resourceVersion: '1' },
        type: 'Warning',
        reason,
        message,
        count: 2,
        firstTimestamp: new Date(clock.now).toISOString(),
        lastTimestamp: new Date(clock.now).toISOString(),
        involvedObject: { kind: 'Pod', name: involved.metadata.name, uid: involved.metadata.uid },
      }) as unknown as KubeObject;

    engine.objectServed(DEPLOYMENTS, deployment(1, 1, '1'), undefined);
    engine.objectServed(REPLICASETS, replicaSet('rs1', '1'), undefined);
    engine.objectServed(DEPLOYMENTS, deployment(2, 1, '1'), undefined);
    const { change } = degradedRollout();
    const followed: ChangeEvent = {
      ...change,
      id: 'web-uid:43',
      object: { ...change.object, uid: 'web-uid', resourceVersion: '43' },
      owner: { ...change.owner!, uid: 'web-uid' },
      time: new Date(clock.now).toISOString(),
    };
    engine.changeProcessed(
      {
        kind: 'updated',
        type: DEPLOYMENTS,
        object: {
          key: 'shop/web',
          namespace: 'shop',
          name: 'web',
          uid: 'web-uid',
          resourceVersion: '43',
          object: {},
        },
      },
      followed,
      [],
    );
    clock.now += 2_000;
    engine.objectServed(REPLICASETS, replicaSet('rs2', '2'), undefined);
    engine.objectServed(DEPLOYMENTS, deployment(2, 2, '2'), undefined);
    // The kubelet expanded $(PASSWORD) into the command it could not run, and the probe printed it.
    const quoting = pod(
      'web-rs2-secret',
      {
        reason: 'RunContainerError',
        message: `failed to start container "app": exec: "${value}": executable file not found in $PATH`,
      },
      true,
    );
    const plain = pod(
      'web-rs2-plain',
      { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=app visible-reason' },
      false,
    );
    engine.warningSeen(
      undefined,
      warning('ev-failed', quoting, 'Failed', `Error: failed to start container "app": exec: "${value}"`),
    );
    engine.warningSeen(
      undefined,
      warning('ev-probe', quoting, 'Unhealthy', `Liveness probe failed: password=${value}`),
    );
    engine.warningSeen(
      undefined,
      warning('ev-plain', plain, 'BackOff', 'Back-off restarting failed container visible-warning'),
    );
    engine.objectServed(PODS, plain, undefined);
    engine.objectServed(PODS, quoting, undefined);
    const outcome = await reported;
    await engine.stop(false);
    assert.equal(outcome.verdict, 'degraded');
    assert.deepEqual(
      outcome.evidence.warnings.map((w) => `${w.object} ${w.reason}`).sort(),
      ['Pod/web-rs2-plain BackOff', 'Pod/web-rs2-secret Failed', 'Pod/web-rs2-secret Unhealthy'],
      'every Warning is evidence',
    );

    // Every path an OUTCOME takes: stdout (JSON, pretty), each chat platform's follow-up after the
    // change's message, a Slack bot's reply in the change's thread and its chat.update of that message.
    const receivers: HttpReceiver[] = [];
    after(() => Promise.all(receivers.map((receiver) => receiver.close())));
    const slackApi = await FakeSlackApi.start({ token: 'xoxb-leaks' });
    after(() => slackApi.close());
    const chat = { minIntervalMs: 0, stories: false };
    const outcomeDir = await mkdtemp(path.join(tmpdir(), 'kubediff-outcome-file-'));
    dirs.push(outcomeDir);
    const fileSinkPath = path.join(outcomeDir, 'events.jsonl');
    const specs: SinkSpec[] = [
      { type: 'slack', token: 'xoxb-leaks', channel: 'alerts', apiUrl: slackApi.apiUrl, ...chat },
      { type: 'file', path: fileSinkPath },
    ];
    const chatReceivers: Record<string, HttpReceiver> = {};
    for (const type of ['slack', 'teams', 'discord', 'mattermost', 'google-chat'] as const) {
      const receiver = await HttpReceiver.start(
        type === 'discord' ? { defaultReply: { status: 204, body: '' } } : {},
      );
      receivers.push(receiver);
      chatReceivers[type] = receiver;
      specs.push({ type, webhookUrl: receiver.url(`/${type}`), ...chat } as SinkSpec);
    }
    // The other sinks that take OUTCOMEs: a webhook (JSON, CloudEvents, a layout), one refusing (its
    // dead letters), OTLP.
    const hooks: Record<string, HttpReceiver> = {};
    for (const name of ['webhook', 'cloudevents', 'layout', 'otlp', 'refusing']) {
      const receiver = await HttpReceiver.start(
        name === 'refusing' ? { defaultReply: { status: 400, body: 'refused' } } : {},
      );
      receivers.push(receiver);
      hooks[name] = receiver;
    }
    const quick = { retry: { maxAttempts: 1, initialDelayMs: 10, maxDelayMs: 20 }, timeoutMs: 5_000 };
    specs.push(
      { type: 'webhook', url: hooks.webhook!.url('/hook'), ...quick },
      {
        type: 'webhook',
        url: hooks.cloudevents!.url('/ce'),
        format: 'cloudevents',
        cloudEventsMode: 'binary',
        ...quick,
      },
      {
        type: 'webhook',
        url: hooks.layout!.url('/layout'),
        layout: '{ "text": type & " " & object.name, "evidence": evidence }',
        ...quick,
      },
      { type: 'otlp', endpoint: hooks.otlp!.url('/'), protocol: 'http/json', batchMaxEvents: 1, ...quick },
      { type: 'webhook', name: 'refusing', url: hooks.refusing!.url('/hook'), ...quick },
    );
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-outcome-leaks-'));
    dirs.push(dir);
    const deadLetterPath = path.join(dir, 'dead.jsonl');
    const sinks = await createSinks(specs, {
      log: memoryLog(),
      stdout: new Writable({ write: (_chunk, _encoding, done) => done() }),
      deadLetterFile: deadLetterPath,
      userAgent: 'kubediff/test',
    });
    sinks.router.deliver(followed);
    await slackApi.receiver.waitForRequests(1);
    sinks.router.deliver(outcome);
    await sinks.router.close(30_000);
    for (const file of sinks.deadLetterFiles) file.close();
    const [message] = slackApi.topLevel();
    assert.ok(message, 'the change was posted');
    const [reply] = slackApi.repliesTo(message);
    assert.ok(reply, 'the OUTCOME was posted in its thread');
    assert.equal(message.edits.length, 1, 'the change’s first line was rewritten');
    await assertNoLeaks([
      { name: 'OUTCOME JSON line', read: () => renderJsonLine(outcome), expect: /visible-warning/ },
      {
        name: 'OUTCOME pretty (color and plain)',
        read: () => prettyRenderer({ color: true })(outcome) + prettyRenderer({ color: false })(outcome),
        expect: /Pod\/web-rs2-secret Failed ×2: not shown/,
      },
      { name: 'Slack thread reply', read: () => JSON.stringify(reply), expect: /visible-warning/ },
      {
        name: 'Slack chat.update body',
        read: () => JSON.stringify(message.edits),
        expect: /degraded in 2s/,
      },
      ...Object.entries(hooks).map(([name, receiver]) =>
        receiverSource(`${name} OUTCOME`, receiver, name === 'otlp' ? /visible-warning/ : /OUTCOME/),
      ),
      fileSource('dead-letter file (OUTCOME)', deadLetterPath, /"type":"OUTCOME"/),
      fileSource('file sink (OUTCOME)', fileSinkPath, /"type":"OUTCOME"/),
      ...Object.entries(chatReceivers).map(([type, receiver]) =>
        receiverSource(`${type} follow-up`, receiver, /visible\\*-warning/),
      ),
    ]);
  });
});
