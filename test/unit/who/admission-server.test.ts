// src/who/admission/admission-server.ts and admission-review.ts on loopback: every AdmissionReview is answered
// allowed, with its uid, and only then kept as a record (nothing of the object but what it is checked by:
// admission-digests.ts); dry runs, CONNECT, uid-less subresource creates, unwatched resources and objects
// that cannot be digested are answered and dropped; the endpoint may run unauthenticated (managed
// clusters); bodies are bounded. A large review is answered from its head and read in the admission
// thread (admission-thread.ts, its real worker held by the test where the test needs it to be still
// reading): small reviews are answered and kept meanwhile, and the thread's bounds drop a review, counted,
// never an answer. The listener (webhook-listener.ts) ends connections stuck in their TLS handshake on close.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { Agent, request } from 'undici';
import { DEFAULT_IGNORED_PATHS, PathMatcher } from '../../../src/diff/ignore.ts';
import { Normalizer } from '../../../src/diff/normalize.ts';
import { Redactor } from '../../../src/diff/redact.ts';
import type { JsonObject, ResourceType } from '../../../src/kube/types.ts';
import type { Logger } from '../../../src/util/log.ts';
import { formatSize } from '../../../src/util/size.ts';
import { AdmissionDigests } from '../../../src/who/admission/admission-digests.ts';
import type { AdmissionRecord } from '../../../src/who/admission/admission-match.ts';
import { type ReviewedWrite, readAdmissionReview } from '../../../src/who/admission/admission-review.ts';
import {
  AdmissionServer,
  type AdmissionServerOptions,
  SMALL_REVIEW_BYTES,
} from '../../../src/who/admission/admission-server.ts';
import { AdmissionThread } from '../../../src/who/admission/admission-thread.ts';
import { objectDigest } from '../../../src/who/admission/object-digest.ts';
import { WEBHOOK_LISTENER_LIMITS, WebhookListener } from '../../../src/who/listener/webhook-listener.ts';
import { largeReviewBody } from '../../helpers/admission-load.ts';
import { HELD_ADMISSION_WORKER, type HeldStart } from '../../helpers/held-admission-worker.ts';
import { assertNoLeaks, secretValue } from '../../helpers/leak-check.ts';
import { makeTestPki, type TestPki } from '../../helpers/pki.ts';
import { seededRandom } from '../../helpers/random-json.ts';
import { configmaps, deployments, secrets } from '../../helpers/resource-types.ts';

const quiet: Logger = { info: () => {}, debug: () => {}, warn: () => {} };

/** Resolves once `check` holds: what the admission thread does comes back on its own time. */
async function until(check: () => boolean, _what: string): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

function reviewBody(overrides: Record<string, unknown> = {}, object: Record<string, unknown> = {}): string {
  const metadata = { name: 'web', namespace: 'shop', uid: 'u1', resourceVersion: '4' };
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'review-1',
      kind: { group: '', version: 'v1', kind: 'ConfigMap' },
      resource: { group: '', version: 'v1', resource: 'configmaps' },
      namespace: 'shop',
      name: 'web',
      operation: 'UPDATE',
      userInfo: {
        username: 'bob',
        uid: 'bob-uid',
        groups: ['devs', 'system:authenticated'],
        extra: { 'authentication.kubernetes.io/credential-id': ['JTI=secret-ish'] },
      },
      object: { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { a: '2' }, ...object },
      oldObject: { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { a: '1' } },
      dryRun: false,
      ...overrides,
    },
  });
}

describe('reading an AdmissionReview', () => {
  it('keeps what names the write, the user without extra, and hands the object out only to be digested', () => {
    const reading = readAdmissionReview(reviewBody());
    assert.ok('write' in reading);
    const { object, ...kept } = reading.write;
    assert.deepEqual(kept, {
      operation: 'UPDATE',
      group: '',
      version: 'v1',
      resource: 'configmaps',
      kind: { group: '', version: 'v1', kind: 'ConfigMap' },
      namespace: 'shop',
      name: 'web',
      uid: 'u1',
      oldResourceVersion: '4',
      user: { username: 'bob', groups: ['devs', 'system:authenticated'], uid: 'bob-uid' },
    });
    assert.deepEqual(object?.data, { a: '2' });
    assert.equal(reading.requestUID, 'review-1');
  });

  it('a DELETE names the old object; a dry run, CONNECT and a uid-less subresource create are ignored', () => {
    const deleting = readAdmissionReview(reviewBody({ operation: 'DELETE', object: null }));
    assert.ok('write' in deleting);
    assert.deepEqual(
      [deleting.write.uid, deleting.write.oldResourceVersion, deleting.write.object],
      ['u1', '4', undefined],
    );
    assert.deepEqual(deleting.write.oldObject?.data, { a: '1' }, 'handed out to be digested');
    const updating = readAdmissionReview(reviewBody());
    assert.equal('write' in updating && updating.write.oldObject, undefined, "only a DELETE's old object");
    const ignored = (overrides: Record<string, unknown>) => {
      const reading = readAdmissionReview(reviewBody(overrides));
      return 'ignored' in reading ? reading.ignored : undefined;
    };
    assert.equal(ignored({ dryRun: true }), 'dry_run');
    assert.equal(ignored({ operation: 'CONNECT' }), 'operation');
    assert.equal(
      ignored({
        operation: 'CREATE',
        subResource: 'eviction',
        object: { metadata: { name: 'web' } },
        oldObject: null,
      }),
      'no_object',
    );
  });

  it('refuses what is not an admission.k8s.io/v1 AdmissionReview with a uid, in one sentence', () => {
    assert.throws(() => readAdmissionReview('{'), /not JSON/);
    assert.throws(
      () => readAdmissionReview('{"kind":"EventList"}'),
      /not an admission.k8s.io\/v1 AdmissionReview/,
    );
    assert.throws(() => readAdmissionReview(reviewBody({ uid: '' })), /no request.uid/);
  });
});

describe('what a review is checked by (admission-digests.ts)', () => {
  const normalizer = new Normalizer({
    ignore: new PathMatcher(DEFAULT_IGNORED_PATHS),
    redactor: new Redactor(),
  });
  const digests = new AdmissionDigests(normalizer);
  const widgets: ResourceType = { ...deployments, group: 'example.com', resource: 'widgets', kind: 'Widget' };
  digests.update([configmaps, secrets, deployments, widgets]);
  const writeOf = (overrides: Record<string, unknown>, object: Record<string, unknown> = {}) => {
    const reading = readAdmissionReview(reviewBody(overrides, object));
    assert.ok('write' in reading);
    return reading.write;
  };
  const stored = (type: ResourceType, object: JsonObject) => objectDigest(normalizer.normalize(type, object));
  const scaleOf = (resource: string, group = 'apps') =>
    writeOf({
      resource: { group, version: 'v1', resource },
      subResource: 'scale',
      kind: { group: 'autoscaling', version: 'v1', kind: 'Scale' },
      object: {
        apiVersion: 'autoscaling/v1',
        kind: 'Scale',
        metadata: { name: 'web', uid: 'u1' },
        spec: { replicas: 7 },
      },
    });

  it("an UPDATE by the digest of the object it produces, a DELETE by its old object's, as the watch stores them", () => {
    const update = writeOf({});
    assert.deepEqual(digests.of(update), { digest: stored(configmaps, update.object as JsonObject) });
    const deleting = writeOf({ operation: 'DELETE', object: null });
    assert.deepEqual(digests.of(deleting), {
      oldDigest: stored(configmaps, deleting.oldObject as JsonObject),
    });
    // The old object's resourceVersion and managedFields are not what the stored object has: left out.
    assert.equal(
      digests.of(deleting)?.oldDigest,
      stored(configmaps, {
        metadata: { name: 'web', namespace: 'shop', uid: 'u1', resourceVersion: '9' },
        data: { a: '1' },
      }),
    );
  });

  it("a scale by its replicas where the Scale's are spec.replicas; nothing to check by for the rest", () => {
    assert.deepEqual(digests.of(scaleOf('deployments')), { replicas: 7 });
    assert.deepEqual(
      digests.of(scaleOf('widgets', 'example.com')),
      {},
      "a custom resource's replicas may be anywhere",
    );
    assert.deepEqual(
      digests.of(writeOf({ kind: { group: '', version: 'v2', kind: 'ConfigMap' } })),
      {},
      'another version',
    );
    assert.deepEqual(
      digests.of(
        writeOf({ operation: 'DELETE', object: null, kind: { group: '', version: 'v2', kind: 'ConfigMap' } }),
      ),
      {},
    );
    assert.equal(
      digests.of(writeOf({ resource: { group: '', version: 'v1', resource: 'pods' } })),
      undefined,
    );
  });

  it('an object nested too deep throws (the server drops the review)', () => {
    let deep: JsonObject = {};
    for (let n = 0; n < 200_000; n++) deep = { a: deep };
    assert.throws(
      () => digests.of({ ...writeOf({}), object: { metadata: { uid: 'u1' }, data: deep } }),
      RangeError,
    );
  });
});

describe('the admission webhook endpoint', () => {
  let dir: string;
  let pki: TestPki;
  let files: { certFile: string; keyFile: string; clientCAFile: string };
  const servers: AdmissionServer[] = [];
  const threads: AdmissionThread[] = [];
  const agents: Agent[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubediff-admission-server-'));
    pki = makeTestPki();
    const file = async (name: string, content: string) => {
      const at = path.join(dir, name);
      await writeFile(at, content);
      return at;
    };
    files = {
      certFile: await file('tls.crt', pki.serverCert),
      keyFile: await file('tls.key', pki.serverKey),
      clientCAFile: await file('ca.crt', pki.caPem),
    };
  });

  after(async () => {
    await Promise.all(servers.map((server) => server.close()));
    await Promise.all(threads.map((thread) => thread.close()));
    await Promise.all(agents.map((agent) => agent.close()));
    await rm(dir, { recursive: true, force: true });
  });

  /** The admission thread, watching configmaps, with the test's hold and stop files (HeldStart). */
  const thread = (held: Omit<HeldStart, 'ignoredPaths'> = {}, maxBytes?: number) => {
    const started = new AdmissionThread(
      { ignoredPaths: DEFAULT_IGNORED_PATHS, ...held },
      {
        maxRequestBytes: 8 * 1024 * 1024,
        ...(maxBytes ? { maxBytes } : {}),
        workerUrl: HELD_ADMISSION_WORKER,
      },
    );
    started.update([{ type: configmaps, redactPaths: [] }]);
    threads.push(started);
    return started;
  };
  const start = async (options: Partial<AdmissionServerOptions> = {}) => {
    const records: AdmissionRecord[] = [];
    const server = await AdmissionServer.start({
      listen: '127.0.0.1:0',
      certFile: files.certFile,
      keyFile: files.keyFile,
      maxRequestBytes: 64 * 1024,
      thread: options.thread ?? thread(),
      digest: (write) =>
        write.resource === 'configmaps' ? { digest: `digest-of-${write.name}` } : undefined,
      onRecords: (taken) => records.push(...taken),
      log: quiet,
      ...options,
    });
    servers.push(server);
    return { server, records };
  };
  const post = async (address: string, body: string, client = false) => {
    const agent = new Agent({
      connect: { ca: pki.caPem, ...(client ? { cert: pki.clientCert, key: pki.clientKey } : {}) },
    });
    agents.push(agent);
    const response = await request(`https://${address}/review`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body,
    });
    return { status: response.statusCode, body: await response.body.text() };
  };

  it('answers allowed with the review uid, then keeps the record: no object, its digest', async () => {
    const { server, records } = await start({ now: () => 42 });
    const answer = await post(server.address, reviewBody());
    assert.equal(answer.status, 200);
    assert.deepEqual(JSON.parse(answer.body), {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'review-1', allowed: true },
    });
    assert.deepEqual(records, [
      {
        reviewUID: 'review-1',
        operation: 'UPDATE',
        group: '',
        resource: 'configmaps',
        namespace: 'shop',
        name: 'web',
        uid: 'u1',
        oldResourceVersion: '4',
        digest: 'digest-of-web',
        user: { username: 'bob', groups: ['devs', 'system:authenticated'], uid: 'bob-uid' },
        time: 42,
      },
    ]);
  });

  it('answers allowed to what it ignores, and counts why', async () => {
    const { server, records } = await start();
    for (const body of [
      reviewBody({ dryRun: true }),
      reviewBody({ resource: { group: 'apps', version: 'v1', resource: 'deployments' } }),
    ]) {
      const answer = await post(server.address, body);
      assert.equal((JSON.parse(answer.body) as { response: { allowed: boolean } }).response.allowed, true);
    }
    assert.deepEqual(records, []);
    assert.deepEqual(Object.fromEntries(server.stats().ignored), { dry_run: 1, not_watched: 1 });
  });

  it('issue 36: a review whose object cannot be digested is dropped, counted and logged once, never kept unchecked', async () => {
    const digests = new AdmissionDigests(
      new Normalizer({ ignore: new PathMatcher(DEFAULT_IGNORED_PATHS), redactor: new Redactor() }),
    );
    digests.update([configmaps]);
    const warnings: string[] = [];
    const log: Logger = { info: () => {}, debug: () => {}, warn: (message) => warnings.push(message) };
    const { server, records } = await start({
      log,
      maxRequestBytes: 8 * 1024 * 1024,
      digest: (write) => digests.of(write),
    });
    const deep = (depth: number) =>
      reviewBody({}, { data: { a: '2' }, spec: {} }).replace(
        '"spec":{}',
        `"spec":{"x":${'['.repeat(depth)}${']'.repeat(depth)}}`,
      );
    // A small review is digested where it is answered; a large one in the admission thread: both dropped.
    assert.ok(deep(10_000).length <= SMALL_REVIEW_BYTES && deep(500_000).length > SMALL_REVIEW_BYTES);
    for (const depth of [10_000, 500_000])
      assert.equal((await post(server.address, deep(depth))).status, 200);
    await until(() => server.stats().ignored.get('digest_failed') === 2, 'the thread drops the large one');
    assert.equal((await post(server.address, reviewBody({ uid: 'review-2' }))).status, 200);
    assert.deepEqual(
      records.map((record) => record.reviewUID),
      ['review-2'],
      'only the review that could be digested',
    );
    assert.deepEqual(Object.fromEntries(server.stats().ignored), { digest_failed: 2 });
    assert.deepEqual(warnings, [
      'admission webhook: dropped a review whose object cannot be digested (nested too deep): it names nobody. Counted in kubediff_admission_reviews_ignored_total{reason="digest_failed"}; logged once.',
    ]);
  });

  it('without authentication it takes any caller (managed clusters); with a client CA, only its certificates', async () => {
    const open = await start();
    assert.equal((await post(open.server.address, reviewBody())).status, 200);
    const warnings: string[] = [];
    const log: Logger = { info: () => {}, debug: () => {}, warn: (message) => warnings.push(message) };
    const closed = await start({ clientCAFile: files.clientCAFile, log });
    assert.equal((await post(closed.server.address, reviewBody())).status, 401);
    assert.equal((await post(closed.server.address, reviewBody())).status, 401);
    assert.equal((await post(closed.server.address, reviewBody(), true)).status, 200);
    assert.deepEqual(warnings, [
      'admission webhook: refused a request from 127.0.0.1: no client certificate. Counted in kubediff_admission_reviews_total{outcome="unauthorized"}; logged once.',
    ]);
  });

  it('a body over the bound is refused (the API server lets the write through), a bad one too', async () => {
    const { server, records } = await start({ maxRequestBytes: 1024 });
    const big = await post(server.address, reviewBody({}, { data: { a: 'x'.repeat(2048) } }));
    assert.equal(big.status, 413);
    assert.equal((await post(server.address, '{"kind":"nope"}')).status, 400);
    assert.deepEqual(Object.fromEntries(server.stats().requests), { too_large: 1, bad_request: 1 });
    assert.deepEqual(records, []);
  });

  it("a Secret's review: its values are in no record and in no log line", async () => {
    const random = seededRandom(28);
    const lines: string[] = [];
    const log: Logger = {
      info: (m) => lines.push(m),
      debug: (m) => lines.push(m),
      warn: (m) => lines.push(m),
    };
    const { server, records } = await start({ log, digest: () => ({ digest: 'd' }) });
    const secret = {
      kind: 'Secret',
      data: { password: Buffer.from(secretValue(random, 40)).toString('base64') },
      stringData: { token: secretValue(random, 40) },
    };
    await post(server.address, reviewBody({ kind: { group: '', version: 'v1', kind: 'Secret' } }, secret));
    assert.equal(records.length, 1);
    await assertNoLeaks([
      { name: 'records', read: () => JSON.stringify(records), expect: 'review-1' },
      { name: 'log', read: () => lines.join('\n'), expect: 'receiving admission reviews' },
    ]);
  });

  /** A large review's answer: status and uid. */
  const answerOf = (answer: { status: number; body: string }) => ({
    status: answer.status,
    uid: answer.status === 200 ? (JSON.parse(answer.body) as { response: { uid: string } }).response.uid : '',
  });
  /** The digest the watch's own normalizer gives the object of a review (main thread). */
  const digestOf = (body: Buffer) => {
    const reading = readAdmissionReview(body.toString('utf8'));
    const digests = new AdmissionDigests(
      new Normalizer({ ignore: new PathMatcher(DEFAULT_IGNORED_PATHS), redactor: new Redactor() }),
    );
    digests.update([configmaps]);
    return digests.of((reading as { write: ReviewedWrite }).write)?.digest;
  };

  it('a large review is answered from its head at once; while the thread still reads it, small reviews are answered and kept', async () => {
    const hold = path.join(dir, 'hold-large');
    await writeFile(hold, '');
    const { server, records } = await start({ thread: thread({ hold }), maxRequestBytes: 16 * 1024 * 1024 });
    const large = largeReviewBody(20_000).withUid('8d1c6e0a-55f3-4c5e-9b1e-3f3a3f0c2d11');
    assert.ok(large.length > SMALL_REVIEW_BYTES);
    assert.deepEqual(answerOf(await post(server.address, large.toString())), {
      status: 200,
      uid: '8d1c6e0a-55f3-4c5e-9b1e-3f3a3f0c2d11',
    });
    // The large review is held in the thread: a small one is answered and kept meanwhile.
    assert.deepEqual(answerOf(await post(server.address, reviewBody())), { status: 200, uid: 'review-1' });
    assert.deepEqual(
      records.map((record) => record.reviewUID),
      ['review-1'],
      'the small review is kept while the large one is still being read',
    );
    await rm(hold);
    await until(() => records.length === 2, "the large review's record");
    const { time: _time, ...kept } = records[1] as AdmissionRecord;
    assert.deepEqual(kept, {
      reviewUID: '8d1c6e0a-55f3-4c5e-9b1e-3f3a3f0c2d11',
      operation: 'UPDATE',
      group: '',
      resource: 'configmaps',
      namespace: 'load',
      name: 'large',
      uid: 'uid-of-large',
      oldResourceVersion: '4',
      // Digested in the thread exactly as the watch's normalizer would here.
      digest: digestOf(large),
      user: { username: 'bob', uid: 'bob-uid', groups: ['system:authenticated'] },
    });
  });

  it("beyond the thread's bound a large review is still answered, and dropped: counted, logged once", async () => {
    const hold = path.join(dir, 'hold-bound');
    await writeFile(hold, '');
    const lines: string[] = [];
    const log: Logger = { info: () => {}, debug: () => {}, warn: (line) => lines.push(line) };
    const large = largeReviewBody(20_000);
    // The thread holds one such review at most.
    const held = thread({ hold }, large.body.length);
    const { server, records } = await start({ thread: held, maxRequestBytes: large.body.length, log });
    const uids = ['0a5d3c6e-1f2b-4a7c-8e9d-0b1c2d3e4f50', '1b6e4d7f-2a3c-4b8d-9f0e-1c2d3e4f5061'];
    for (const uid of uids) {
      assert.deepEqual(answerOf(await post(server.address, large.withUid(uid).toString())), {
        status: 200,
        uid,
      });
    }
    assert.deepEqual(Object.fromEntries(server.stats().ignored), { thread_busy: 1 });
    await rm(hold);
    await until(() => records.length === 1, 'the first review kept');
    assert.equal(records[0]?.reviewUID, uids[0]);
    assert.deepEqual(lines, [
      `admission webhook: ${formatSize(large.body.length)} of large reviews are being read for or waiting for the thread that reads them, the most it holds; a large review is answered and dropped, its write named by no user. Counted in kubediff_admission_reviews_ignored_total{reason="thread_busy"}; logged once.`,
    ]);
  });

  it('a large review takes its room in the thread before its body is read: one that finds none is answered from its head and dropped', async () => {
    const large = largeReviewBody(20_000);
    // Room for one such review.
    const held = thread({}, large.body.length);
    const { server, records } = await start({ thread: held, maxRequestBytes: large.body.length });
    const first = '4e9b7a0c-5d6f-4e1a-8c3b-4f5061728394';
    const second = '5fac8b1d-6e7a-4f2b-9d4c-506172839405';
    // The first arrives in part: its room is taken while it is read.
    const body = large.withUid(first);
    const socket = tlsConnect({ port: server.listener.port, host: '127.0.0.1', ca: pki.caPem });
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString();
    });
    const closed = new Promise((resolve) => socket.once('close', resolve));
    await new Promise((resolve) => socket.once('secureConnect', resolve));
    socket.write(
      `POST /review HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
    );
    socket.write(body.subarray(0, SMALL_REVIEW_BYTES));
    await until(() => held.inFlight === body.length, 'the room taken for the first');
    // The second finds no room: answered from its head, dropped, counted.
    assert.deepEqual(answerOf(await post(server.address, large.withUid(second).toString())), {
      status: 200,
      uid: second,
    });
    assert.deepEqual(Object.fromEntries(server.stats().ignored), { thread_busy: 1 });
    socket.end(body.subarray(SMALL_REVIEW_BYTES));
    await closed;
    assert.match(received, /^HTTP\/1\.1 200 /);
    await until(() => records.length === 1, 'the first kept');
    assert.equal(records[0]?.reviewUID, first);
    await until(() => held.inFlight === 0, 'its room given back');
  });

  it('a large review whose uid is not in its head is answered once the thread has read it; a large body that is no review: 400', async () => {
    const { server, records } = await start({ maxRequestBytes: 16 * 1024 * 1024 });
    const padded = JSON.stringify({
      padding: 'x'.repeat(2 * SMALL_REVIEW_BYTES),
      ...(JSON.parse(reviewBody()) as Record<string, unknown>),
    });
    assert.deepEqual(answerOf(await post(server.address, padded)), { status: 200, uid: 'review-1' });
    await until(() => records.length === 1, 'its record');
    const garbage = await post(server.address, `[${'1,'.repeat(SMALL_REVIEW_BYTES)}1]`);
    assert.equal(garbage.status, 400);
    assert.match(garbage.body, /not an admission\.k8s\.io\/v1 AdmissionReview/);
  });

  it('a large review whose body is no review once read whole, or names another uid, is dropped as unreadable', async () => {
    const { server, records } = await start({ maxRequestBytes: 16 * 1024 * 1024 });
    const large = largeReviewBody(20_000).body.toString();
    // Its head, then a body cut short; its head, then a second uid that JSON.parse takes.
    const broken = large.slice(0, -10);
    const twice = large.replace('"kind":{"group"', '"uid":"another","kind":{"group"');
    for (const body of [broken, twice]) assert.equal((await post(server.address, body)).status, 200);
    await until(() => server.stats().ignored.get('unreadable') === 2, 'both dropped');
    assert.deepEqual(records, []);
  });

  it('the thread stopped while reading (its heap limit): the review is dropped, logged once; the next is read by a new thread', async () => {
    const stopWhile = path.join(dir, 'stop');
    await writeFile(stopWhile, '');
    const lines: string[] = [];
    const log: Logger = { info: () => {}, debug: () => {}, warn: (line) => lines.push(line) };
    const { server, records } = await start({
      thread: thread({ stopWhile }),
      maxRequestBytes: 16 * 1024 * 1024,
      log,
    });
    const large = largeReviewBody(20_000);
    const first = '2c7f5e8a-3b4d-4c9e-8a1f-2d3e4f506172';
    assert.deepEqual(answerOf(await post(server.address, large.withUid(first).toString())), {
      status: 200,
      uid: first,
    });
    await until(() => server.stats().ignored.get('thread_failed') === 1, 'the review dropped');
    await rm(stopWhile);
    const second = '3d8a6f9b-4c5e-4d0f-9b2a-3e4f50617283';
    await post(server.address, large.withUid(second).toString());
    await until(() => records.length === 1, 'the next review kept');
    assert.equal(records[0]?.reviewUID, second);
    assert.deepEqual(lines, [
      'admission webhook: the thread that reads large reviews stopped; the reviews it held are dropped, its writes named by no user, and it is started again for the next one. Counted in kubediff_admission_reviews_ignored_total{reason="thread_failed"}; logged once.',
    ]);
  });

  it('close() ends a connection still in its TLS handshake, however long handshakes may take', async () => {
    const listener = await WebhookListener.start({
      name: 'test webhook',
      settingsKey: 'test',
      listener: 'admission',
      flag: '--test-listen',
      requestsMetric: 'kubediff_test_requests_total',
      listen: '127.0.0.1:0',
      certFile: files.certFile,
      keyFile: files.keyFile,
      maxRequestBytes: 1024,
      maxConcurrentRequests: 1,
      // Were close() to wait for the handshake, the test would time out.
      limits: { ...WEBHOOK_LISTENER_LIMITS, handshakeTimeoutMs: 3_600_000 },
      route: { receive: () => ({ status: 200, body: '{}' }) },
      log: quiet,
    });
    const socket = connect(listener.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const closedSocket = new Promise((resolve) => socket.once('close', resolve));
    await listener.close();
    await closedSocket;
  });
});
