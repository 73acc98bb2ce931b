// The standing hostile-input harness (docs/security.md, "Tested"): seeded, generated
// hostile input at every surface that takes input from outside, each time asserting that kubediff lives,
// answers with its documented error, stays within its memory bound and shows no secret.
//
// - config files: `kubediff validate`'s code path on documents that are almost right (a valid config with
//   random parts replaced, renamed, retyped or nested too deep) or not quite YAML (truncated, a stray
//   byte, an alias bomb); either valid, or a UsageError (exit 2) that never quotes a ${VAR}'s secret;
// - kubeconfigs: the kubeconfig reader and the client built from it, the same way; a token never quoted;
// - audit requests: the audit webhook endpoint (TLS, a bearer token) with hostile bodies and headers;
//   each answer one of its documented statuses, the endpoint still serving a real record afterwards;
// - admission reviews: the admission webhook endpoint (a client CA and a token) with hostile bodies,
//   headers, methods and client certificates (none, another CA's, a wrong name); the same contract, and
//   every review that is answered allowed carries its request's uid;
// - admission reviews under load: an unauthenticated admission endpoint (as on a managed cluster) held by
//   slow bodies from two addresses (each read finished just under the slow-body cut) while large hostile
//   reviews (of 0.4 and 2 MB, without their head, mangled, nested far too deep) arrive from a
//   third; every real review sent meanwhile is answered 200 with its uid and kept, the admission thread
//   within its bound, the heap within its own;
// - peer records: what the other replicas post (PEER_PATH), with hostile bodies and methods, from clients
//   presenting this replica's certificate, another one, or none; the same contract;
// - the UI: a real `kubediff ui` process with hostile paths, query parameters and methods, by a real HTTP
//   client and by raw sockets; each answer a documented status with a JSON error, never 500, never its
//   token; the process alive and under its memory bound afterwards;
// - objects through the real API server: hostile values, annotations and field managers written to the
//   test cluster while `kubediff watch` delivers to every sink; each chat receiver refuses a payload
//   that breaks its platform's rules or holds anything it would act on (test/helpers/chat-receivers.ts),
//   and none does; a redacted canary shows nowhere.
// - forged admission reviews: a real API server calls `kubediff watch`'s admission webhook, open to anyone
//   as on a managed cluster; before each real write (a patch, a scale, a delete, a delete held by a
//   finalizer and the update that releases it) a forger who can read the object posts reviews naming
//   alice (test/helpers/hostile-input.ts, forgedReview()); every event names its real writer exactly,
//   or nobody (ambiguous), never alice.
// The number of inputs per surface is printed and written into docs/security.md.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Agent, request } from 'undici';
import { exitCodeOf } from '../../src/cli/exit-codes.ts';
import { runValidate } from '../../src/cli/validate.ts';
import { DEFAULT_IGNORED_PATHS } from '../../src/diff/ignore.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { loadKubeconfig } from '../../src/kube/kubeconfig.ts';
import type { JsonObject } from '../../src/kube/types.ts';
import { ADMISSION_CONCURRENT_REQUESTS, MEMORY_SHARES } from '../../src/util/memory-budget.ts';
import type { AdmissionRecord } from '../../src/who/admission/admission-match.ts';
import { AdmissionServer } from '../../src/who/admission/admission-server.ts';
import { AdmissionThread } from '../../src/who/admission/admission-thread.ts';
import type { AuditRecord } from '../../src/who/audit/audit-match.ts';
import { AuditServer } from '../../src/who/audit/audit-server.ts';
import { PEER_PATH } from '../../src/who/listener/webhook-listener.ts';
import { encodePeerRecords, readPeerRecords } from '../../src/who/peers/peer-records.ts';
import {
  admissionWebhookConfiguration,
  needsSharedEtcd,
  registerWebhook,
  startAdmissionApiserver,
} from '../helpers/admission-apiserver.ts';
import { largeReviewBody, postReview, reviewBody, slowBodies } from '../helpers/admission-load.ts';
import { CHAT_PLATFORMS, type ChatPlatformName } from '../helpers/chat-platforms.ts';
import { payloadProblems } from '../helpers/chat-receivers.ts';
import { killAll, runKubediff } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import type { TestEvent } from '../helpers/events.ts';
import { writeGeneratedHistory } from '../helpers/generated-history.ts';
import {
  type ForgeryTarget,
  forgedReview,
  hostileDocument,
  hostileUiTarget,
  mangled,
  type Random,
} from '../helpers/hostile-input.ts';
import { hostileText } from '../helpers/hostile-text.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { adminClient, KubeAdmin } from '../helpers/kube-admin.ts';
import { assertNoLeaks, CANARY, receiverSource } from '../helpers/leak-check.ts';
import { makeTestPki } from '../helpers/pki.ts';
import { freePorts } from '../helpers/processes.ts';
import { seededRandom } from '../helpers/random-json.ts';
import { configmaps } from '../helpers/resource-types.ts';
import { blockKitProblems } from '../helpers/slack-payload.ts';

/** Inputs tried per surface (docs/security.md reports them). */
const INPUTS = {
  config: 2_000,
  kubeconfig: 2_000,
  audit: 2_000,
  admission: 2_000,
  admissionLoad: 12,
  peer: 1_000,
  ui: 3_000,
  objects: 250,
  /** Rounds of real writes (75 writes: a quarter of the rounds make two), each with 1 to 6 forged reviews before it. */
  forgedRounds: 60,
};
const SEED = 27;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
/** Heap in use after a full collection, MiB. */
function heapMiB(): number {
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}
/** What the harness allows the test process's own heap to grow by over one surface's inputs. */
const HEAP_GROWTH_MIB = 64;

let dir: string;
const figures: Record<string, number> = {};
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'kubediff-hostile-'));
});
after(async () => {
  await killAll();
  await rm(dir, { recursive: true, force: true });
  console.log(`hostile inputs per surface: ${JSON.stringify(figures)}`);
});

/** A secret that a document references and an answer must never show. */
const SECRET = `${CANARY}hostile-secret-0123456789`;

/** Process warnings (a library's, on stderr beside kubediff's one sentence) while a surface runs. */
const warnings: string[] = [];
process.on('warning', (warning) => warnings.push(`${warning.name}: ${warning.message}`));

/** Runs `input` on each generated case; collects (up to 10) cases that broke the surface's contract. */
async function each(
  count: number,
  random: Random,
  check: (index: number, random: Random) => Promise<string | undefined> | string | undefined,
): Promise<void> {
  const broken: string[] = [];
  for (let index = 0; index < count; index++) {
    const warned = warnings.length;
    const problem =
      (await check(index, random)) ??
      (warnings.length > warned ? `a process warning: ${warnings.at(-1)}` : undefined);
    if (problem !== undefined && broken.length < 10) broken.push(`seed ${SEED}, input ${index}: ${problem}`);
  }
  assert.deepEqual(broken, []);
}

/** The contract of a command-line surface: fine, or a UsageError (exit 2) that shows no secret. */
function usageProblem(error: unknown, outputs: string): string | undefined {
  if (error !== undefined && exitCodeOf(error) !== 2)
    return `not a usage error (exit ${exitCodeOf(error)}): ${String((error as Error)?.stack ?? error).slice(0, 300)}`;
  const message = error instanceof Error ? error.message : '';
  if (`${message}${outputs}`.includes(CANARY)) return `shows the secret: ${message.slice(0, 200)}`;
  if (/\n\s+at .+:\d+:\d+\)?$/m.test(message)) return `a stack trace: ${message.slice(0, 200)}`;
  return undefined;
}

/** `${NAME}`, a reference to an environment variable in a config file. */
const variable = (name: string) => ['$', `{${name}}`].join('');

const CONFIG_TEMPLATE: JsonObject = {
  clusterName: 'prod',
  namespaces: ['shop', 'web-*'],
  resources: ['deployments', 'configmaps', 'widgets.example.com'],
  ignore: ['/metadata/annotations', { path: '/data/color', resources: ['cm'] }],
  redact: [{ path: '/data/password', resources: ['configmaps'] }],
  events: ['added', 'updated'],
  shutdownTimeout: '10s',
  stories: { window: '5s', maxLength: '1m', maxOpenEvents: 100, maxOpenSize: '1MB' },
  sinks: [
    { type: 'stdout', format: 'json' },
    {
      type: 'webhook',
      url: variable('HOOK_URL'),
      headers: { Authorization: `Bearer ${variable('HOOK_TOKEN')}` },
      batch: 10,
    },
    {
      type: 'slack',
      webhookUrl: variable('HOOK_URL'),
      filter: { namespaces: ['prod'], events: ['deleted'] },
    },
    { type: 'teams', webhookUrl: variable('HOOK_URL'), minInterval: '1s' },
    {
      type: 'kafka',
      brokers: ['k:9093'],
      topic: 't',
      tls: true,
      sasl: { mechanism: 'PLAIN', username: 'u', password: variable('HOOK_TOKEN') },
    },
  ],
  audit: { listen: '127.0.0.1:0', certFile: '/nonexistent/tls.crt', keyFile: '/nonexistent/tls.key' },
};

const KUBECONFIG_TEMPLATE: JsonObject = {
  apiVersion: 'v1',
  kind: 'Config',
  'current-context': 'prod',
  clusters: [
    { name: 'prod', cluster: { server: 'https://127.0.0.1:6443', 'insecure-skip-tls-verify': true } },
  ],
  users: [{ name: 'admin', user: { token: SECRET } }],
  contexts: [{ name: 'prod', context: { cluster: 'prod', user: 'admin', namespace: 'shop' } }],
};

describe('the hostile-input harness', () => {
  it(`config files: ${INPUTS.config} documents through kubediff validate's code path`, async () => {
    const random = seededRandom(SEED);
    const file = path.join(dir, 'config.yaml');
    const env = { HOOK_URL: `https://hooks.example.invalid/${SECRET}`, HOOK_TOKEN: SECRET };
    const before = heapMiB();
    await each(INPUTS.config, random, async () => {
      writeFileSync(file, hostileDocument(random, CONFIG_TEMPLATE));
      const out: string[] = [];
      const sink = new Writable({
        write(chunk, _encoding, done) {
          out.push(String(chunk));
          done();
        },
      });
      try {
        await runValidate({ config: file }, { env, stdout: sink, stderr: sink });
        return usageProblem(undefined, out.join(''));
      } catch (error) {
        return usageProblem(error, out.join(''));
      }
    });
    assert.ok(heapMiB() - before < HEAP_GROWTH_MIB, 'the heap stays within its bound');
    figures.config = INPUTS.config;
  });

  it(`kubeconfigs: ${INPUTS.kubeconfig} documents through the kubeconfig reader and the client`, async () => {
    const random = seededRandom(SEED + 1);
    const file = path.join(dir, 'kubeconfig');
    const before = heapMiB();
    await each(INPUTS.kubeconfig, random, async () => {
      writeFileSync(file, hostileDocument(random, KUBECONFIG_TEMPLATE));
      try {
        const identity = loadKubeconfig({ kubeconfig: file });
        // An exec plugin or an auth provider runs what the kubeconfig says, as kubectl does: not built here.
        if (!('exec' in identity.user) && !('authProvider' in identity.user)) {
          const client = await KubeClient.create(identity);
          await client.close();
        }
        return undefined;
      } catch (error) {
        return usageProblem(error, '');
      }
    });
    assert.ok(heapMiB() - before < HEAP_GROWTH_MIB, 'the heap stays within its bound');
    figures.kubeconfig = INPUTS.kubeconfig;
  });

  it(`audit requests: ${INPUTS.audit} hostile bodies and headers at the audit endpoint`, async () => {
    const random = seededRandom(SEED + 2);
    const pki = makeTestPki();
    const files = {
      certFile: path.join(dir, 'tls.crt'),
      keyFile: path.join(dir, 'tls.key'),
    };
    await writeFile(files.certFile, pki.serverCert);
    await writeFile(files.keyFile, pki.serverKey);
    const received: AuditRecord[] = [];
    const logged: string[] = [];
    const log = {
      info: (line: string) => logged.push(line),
      warn: (line: string) => logged.push(line),
      debug: (line: string) => logged.push(line),
    };
    const server = await AuditServer.start({
      listen: '127.0.0.1:0',
      ...files,
      token: SECRET,
      maxRequestBytes: 256 * 1024,
      onRecords: (records) => received.push(...records),
      log,
    });
    const agent = new Agent({ connect: { ca: pki.caPem } });
    const template: JsonObject = {
      kind: 'EventList',
      apiVersion: 'audit.k8s.io/v1',
      items: [
        {
          auditID: 'a1',
          stage: 'ResponseComplete',
          verb: 'update',
          user: { username: 'alice', groups: ['system:authenticated'] },
          impersonatedUser: { username: 'bob' },
          userAgent: 'kubectl/v1.36.3',
          objectRef: { resource: 'configmaps', namespace: 'shop', name: 'web', apiGroup: '' },
          responseObject: { kind: 'ConfigMap', metadata: { uid: 'u1', resourceVersion: '1' } },
          stageTimestamp: '2026-11-22T10:31:07.412Z',
        },
      ],
    };
    const documented = new Set([200, 400, 401, 403, 405, 413, 415, 503]);
    const post = async (body: string, headers: Record<string, string>, method = 'POST') => {
      const response = await request(`https://${server.address}/audit`, {
        method: method as 'POST',
        dispatcher: agent,
        headers,
        ...(method === 'POST' || method === 'PUT' ? { body } : {}),
      });
      return { status: response.statusCode, text: await response.body.text() };
    };
    const before = heapMiB();
    try {
      await each(INPUTS.audit, random, async () => {
        const body =
          random() < 0.8 ? hostileDocument(random, template) : mangled(random, JSON.stringify(template));
        const headers: Record<string, string> = {};
        const auth = random();
        if (auth < 0.85) headers.authorization = `Bearer ${SECRET}`;
        else if (auth < 0.9)
          headers.authorization = `Bearer ${hostileText(random, 1).replace(/[^\x20-\x7e]/g, '')}`;
        else if (auth < 0.95) headers.authorization = `Basic ${Buffer.from(SECRET).toString('base64')}`;
        if (random() < 0.3)
          headers['content-type'] =
            random() < 0.5 ? 'text/plain' : hostileText(random, 1).replace(/[^\x20-\x7e]/g, '');
        if (random() < 0.2) headers['x-hostile'] = hostileText(random, 2).replace(/[^\x20-\x7e]/g, '');
        const method = random() < 0.05 ? (random() < 0.5 ? 'GET' : 'PUT') : 'POST';
        let answer: { status: number; text: string };
        try {
          answer = await post(body, headers, method);
        } catch (error) {
          return `no answer: ${(error as Error).message}`;
        }
        if (!documented.has(answer.status)) return `status ${answer.status}: ${answer.text.slice(0, 200)}`;
        if (answer.text.includes(CANARY)) return 'the answer shows the token';
        if (/\n\s+at .+:\d+:\d+/.test(answer.text)) return `a stack trace: ${answer.text.slice(0, 200)}`;
        return undefined;
      });
      // Still serving: a real record is taken.
      const taken = received.length;
      const ok = await post(JSON.stringify(template), { authorization: `Bearer ${SECRET}` });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(received.length, taken + 1);
      assert.ok(
        received.every((record) => typeof record.auditID === 'string'),
        'only records with an audit id reach the join',
      );
      assert.ok(!logged.join('\n').includes(CANARY), 'no token in the log');
      assert.ok(heapMiB() - before < HEAP_GROWTH_MIB, 'the heap stays within its bound');
    } finally {
      await agent.close();
      await server.close();
    }
    figures.audit = INPUTS.audit;
  });

  /** Headers a hostile client may send beside its body: a token right, wrong or absent, odd types. */
  const hostileHeaders = (random: Random): Record<string, string> => {
    const headers: Record<string, string> = {};
    const auth = random();
    if (auth < 0.85) headers.authorization = `Bearer ${SECRET}`;
    else if (auth < 0.9)
      headers.authorization = `Bearer ${hostileText(random, 1).replace(/[^\x20-\x7e]/g, '')}`;
    else if (auth < 0.95) headers.authorization = `Basic ${Buffer.from(SECRET).toString('base64')}`;
    if (random() < 0.3)
      headers['content-type'] =
        random() < 0.5 ? 'text/plain' : hostileText(random, 1).replace(/[^\x20-\x7e]/g, '');
    if (random() < 0.2) headers['x-hostile'] = hostileText(random, 2).replace(/[^\x20-\x7e]/g, '');
    return headers;
  };
  const hostileMethod = (random: Random) =>
    random() < 0.05 ? (random() < 0.5 ? 'GET' : random() < 0.5 ? 'PUT' : 'DELETE') : 'POST';
  /** The contract of a webhook's answer: a documented status, no token, no stack trace. */
  const answerProblem = (
    answer: { status: number; text: string },
    documented: ReadonlySet<number>,
  ): string | undefined => {
    if (!documented.has(answer.status)) return `status ${answer.status}: ${answer.text.slice(0, 200)}`;
    if (answer.text.includes(CANARY)) return 'the answer shows the token';
    if (/\n\s+at .+:\d+:\d+/.test(answer.text)) return `a stack trace: ${answer.text.slice(0, 200)}`;
    return undefined;
  };
  const logInto = (logged: string[]) => ({
    info: (line: string) => logged.push(line),
    warn: (line: string) => logged.push(line),
    debug: (line: string) => logged.push(line),
  });
  const threads: AdmissionThread[] = [];
  after(() => Promise.all(threads.map((thread) => thread.close())));
  /** The thread where an admission webhook reads large reviews, watching configmaps. */
  const admissionThread = (maxRequestBytes: number) => {
    const thread = new AdmissionThread({ ignoredPaths: DEFAULT_IGNORED_PATHS }, { maxRequestBytes });
    thread.update([{ type: configmaps, redactPaths: [] }]);
    threads.push(thread);
    return thread;
  };
  /** POSTs (or another method) through `agent`; never throws for an answer, only for no answer. */
  const send = async (
    agent: Agent,
    url: string,
    body: string,
    headers: Record<string, string>,
    method = 'POST',
  ): Promise<{ status: number; text: string }> => {
    const response = await request(url, {
      method: method as 'POST',
      dispatcher: agent,
      headers,
      ...(method === 'POST' || method === 'PUT' ? { body } : {}),
    });
    return { status: response.statusCode, text: await response.body.text() };
  };

  it(`admission reviews: ${INPUTS.admission} hostile bodies, headers, methods and client certificates`, async () => {
    const random = seededRandom(SEED + 5);
    const pki = makeTestPki({ otherClients: ['mallory'] });
    const stranger = makeTestPki();
    const files = {
      certFile: path.join(dir, 'admission.crt'),
      keyFile: path.join(dir, 'admission.key'),
      clientCAFile: path.join(dir, 'admission-ca.crt'),
    };
    await writeFile(files.certFile, pki.serverCert);
    await writeFile(files.keyFile, pki.serverKey);
    await writeFile(files.clientCAFile, pki.caPem);
    const received: AdmissionRecord[] = [];
    const logged: string[] = [];
    const server = await AdmissionServer.start({
      listen: '127.0.0.1:0',
      ...files,
      clientNames: [pki.clientName],
      token: SECRET,
      maxRequestBytes: 256 * 1024,
      digest: () => ({ digest: 'd' }),
      thread: admissionThread(256 * 1024),
      onRecords: (records) => received.push(...records),
      log: logInto(logged),
    });
    // The API server's certificate, a certificate of the same CA with another name, another CA's, none.
    const agents = [
      new Agent({ connect: { ca: pki.caPem, cert: pki.clientCert, key: pki.clientKey } }),
      new Agent({ connect: { ca: pki.caPem, ...pki.others.mallory } }),
      new Agent({ connect: { ca: pki.caPem, cert: stranger.clientCert, key: stranger.clientKey } }),
      new Agent({ connect: { ca: pki.caPem } }),
    ];
    const template: JsonObject = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'review-1',
        kind: { group: '', version: 'v1', kind: 'ConfigMap' },
        resource: { group: '', version: 'v1', resource: 'configmaps' },
        namespace: 'shop',
        name: 'web',
        operation: 'UPDATE',
        userInfo: { username: 'bob', uid: 'bob-uid', groups: ['devs', 'system:authenticated'] },
        object: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'web', uid: 'u1' },
          data: { a: '2' },
        },
        oldObject: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'web', uid: 'u1', resourceVersion: '4' },
          data: { a: '1' },
        },
        dryRun: false,
      },
    };
    const documented = new Set([200, 400, 401, 403, 405, 408, 413, 503]);
    const url = `https://${server.address}/review`;
    const before = heapMiB();
    try {
      await each(INPUTS.admission, random, async () => {
        const body =
          random() < 0.8 ? hostileDocument(random, template) : mangled(random, JSON.stringify(template));
        const client = random();
        const agent = agents[client < 0.85 ? 0 : client < 0.9 ? 1 : client < 0.95 ? 2 : 3] as Agent;
        let answer: { status: number; text: string };
        try {
          answer = await send(agent, url, body, hostileHeaders(random), hostileMethod(random));
        } catch (error) {
          return `no answer: ${(error as Error).message}`;
        }
        const problem = answerProblem(answer, documented);
        if (problem) return problem;
        if (answer.status === 200) {
          // Allowed, for the review it was asked about: the uid of the body's request.
          const review = JSON.parse(answer.text) as { response?: { uid?: unknown; allowed?: unknown } };
          if (review.response?.allowed !== true || typeof review.response.uid !== 'string')
            return `an answer that is not an allowed review: ${answer.text.slice(0, 200)}`;
        }
        return undefined;
      });
      const taken = received.length;
      const ok = await send(agents[0] as Agent, url, JSON.stringify(template), {
        authorization: `Bearer ${SECRET}`,
      });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(received.length, taken + 1, 'still serving: a real review is taken');
      assert.ok(!logged.join('\n').includes(CANARY), 'no token in the log');
      assert.ok(heapMiB() - before < HEAP_GROWTH_MIB, 'the heap stays within its bound');
    } finally {
      await Promise.all(agents.map((agent) => agent.close()));
      await server.close();
    }
    figures.admission = INPUTS.admission;
  });

  it(`admission reviews under load: ${INPUTS.admissionLoad} large hostile reviews and 16 slow-body connections at an unauthenticated endpoint`, async () => {
    const random = seededRandom(SEED + 8);
    const pki = makeTestPki();
    const files = { certFile: path.join(dir, 'load.crt'), keyFile: path.join(dir, 'load.key') };
    await writeFile(files.certFile, pki.serverCert);
    await writeFile(files.keyFile, pki.serverKey);
    const received = new Set<string>();
    // admission.maxRequestSize's default on a heap of 768 MiB up (8 MiB).
    const maxRequestBytes = MEMORY_SHARES.admissionBodies.maxBytes / ADMISSION_CONCURRENT_REQUESTS;
    const thread = admissionThread(maxRequestBytes);
    // As on a managed cluster: whoever reaches the port may post, slowly or hugely.
    const server = await AdmissionServer.start({
      listen: '127.0.0.1:0',
      ...files,
      maxRequestBytes,
      digest: () => ({ digest: 'd' }),
      thread,
      onRecords: (records) => {
        for (const record of records) received.add(record.reviewUID);
      },
      log: logInto([]),
    });
    const url = `https://${server.address}/review`;
    const attack = slowBodies({
      port: Number(server.address.split(':')[1]),
      ca: pki.caPem,
      addresses: ['127.0.0.2', '127.0.0.3'],
      perAddress: 8,
      cycleMs: 950,
    });
    // Built once, each sent with a uid of its own: 0.4 and 2 MB.
    const bodies = [largeReviewBody(20_000), largeReviewBody(100_000)];
    /** A large body: a review of 0.4 or 2 MB, without its head, mangled, or nested too deep. */
    const large = (index: number): string => {
      const uid = `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`;
      const review = bodies[Math.floor(random() * bodies.length)] as (typeof bodies)[number];
      const text = review.withUid(uid).toString();
      switch (Math.floor(random() * 5)) {
        case 0:
          return `{"padding":"${'x'.repeat(128 * 1024)}",${text.slice(1)}`;
        case 1:
          return mangled(random, text);
        case 2:
          return `${text.slice(0, -2)},"deep":${'['.repeat(500_000)}${']'.repeat(500_000)}}}`;
        default:
          return text;
      }
    };
    const documented = new Set([200, 400, 408, 413, 503]);
    // From an address of their own: the API server's (the real reviews') is 127.0.0.1.
    const agents = [0, 1, 2].map(
      () => new Agent({ connect: { ca: pki.caPem, localAddress: '127.0.0.4' }, connections: 1 }),
    );
    const realAgent = new Agent({ connect: { ca: pki.caPem }, connections: 1 });
    const real: string[] = [];
    const before = heapMiB();
    let sent = 0;
    try {
      // Every read taken by the attack before anything is sent.
      while (!attack.statuses.has(503)) await new Promise((resolve) => setTimeout(resolve, 10));
      const posting = (async () => {
        const broken: string[] = [];
        // Three at once, as long as the real reviews go on.
        await Promise.all(
          agents.map(async (agent, lane) => {
            for (let index = lane; index < INPUTS.admissionLoad; index += agents.length) {
              sent++;
              let answer: { status: number; text: string };
              try {
                answer = await send(agent, url, large(index), {});
              } catch (error) {
                broken.push(`seed ${SEED + 8}, input ${index}: no answer: ${(error as Error).message}`);
                continue;
              }
              const problem = answerProblem(answer, documented);
              if (problem) broken.push(`seed ${SEED + 8}, input ${index}: ${problem}`);
            }
          }),
        );
        return broken;
      })();
      // Real reviews, one after another, until the large ones are all sent.
      const answers: string[] = [];
      let done = false;
      void posting.finally(() => {
        done = true;
      });
      while (!done || real.length < 20) {
        const uid = `11111111-0000-4000-8000-${String(real.length).padStart(12, '0')}`;
        real.push(uid);
        const answer = await postReview(realAgent, url, reviewBody(uid));
        answers.push(
          answer.status === 200 && answer.uid === uid && answer.allowed ? 'ok' : JSON.stringify(answer),
        );
      }
      assert.deepEqual(await posting, []);
      assert.deepEqual(
        answers.filter((answer) => answer !== 'ok'),
        [],
        `${real.length} real reviews among the slow bodies and ${sent} large ones: each answered 200 with its uid`,
      );
      assert.deepEqual(
        real.filter((uid) => !received.has(uid)),
        [],
        'every real review is kept',
      );
      assert.ok(thread.inFlight <= thread.maxBytes, 'the thread holds at most its bound');
      assert.ok(heapMiB() - before < HEAP_GROWTH_MIB, 'the heap stays within its bound');
    } finally {
      await attack.stop();
      await Promise.all([...agents, realAgent].map((agent) => agent.close()));
      await server.close();
    }
    figures.admissionLoad = INPUTS.admissionLoad;
  });

  it(`peer records: ${INPUTS.peer} hostile bodies and methods from this replica's certificate, another and none`, async () => {
    const random = seededRandom(SEED + 6);
    const pki = makeTestPki();
    const stranger = makeTestPki();
    const files = { certFile: path.join(dir, 'peer.crt'), keyFile: path.join(dir, 'peer.key') };
    await writeFile(files.certFile, pki.serverCert);
    await writeFile(files.keyFile, pki.serverKey);
    const received: AdmissionRecord[] = [];
    const logged: string[] = [];
    const server = await AdmissionServer.start({
      listen: '127.0.0.1:0',
      ...files,
      maxRequestBytes: 256 * 1024,
      digest: () => ({ digest: 'd' }),
      thread: admissionThread(256 * 1024),
      onRecords: () => {},
      // As src/who/start.ts reads them.
      peerRoute: {
        receive: (body) => {
          try {
            received.push(...readPeerRecords(body.toString('utf8')).admission);
            return { status: 200, body: '{}' };
          } catch (error) {
            return { status: 400, body: '', why: (error as Error).message };
          }
        },
      },
      log: logInto(logged),
    });
    const agents = [
      new Agent({ connect: { rejectUnauthorized: false, cert: pki.serverCert, key: pki.serverKey } }),
      new Agent({
        connect: { rejectUnauthorized: false, cert: stranger.serverCert, key: stranger.serverKey },
      }),
      new Agent({ connect: { rejectUnauthorized: false } }),
    ];
    const record: AdmissionRecord = {
      reviewUID: 'r1',
      operation: 'UPDATE',
      group: 'apps',
      resource: 'deployments',
      namespace: 'shop',
      name: 'web',
      uid: 'u1',
      oldResourceVersion: '4',
      digest: 'd',
      user: { username: 'bob', groups: ['devs'], uid: 'bob-uid' },
      time: 1_700_000_000_000,
    };
    const template = JSON.parse(encodePeerRecords({ audit: [], admission: [record] })) as JsonObject;
    const documented = new Set([200, 400, 401, 405, 408, 413, 503]);
    const url = `https://${server.address}${PEER_PATH}`;
    const before = heapMiB();
    try {
      await each(INPUTS.peer, random, async () => {
        const body =
          random() < 0.8 ? hostileDocument(random, template) : mangled(random, JSON.stringify(template));
        const client = random();
        const agent = agents[client < 0.85 ? 0 : client < 0.93 ? 1 : 2] as Agent;
        let answer: { status: number; text: string };
        try {
          answer = await send(agent, url, body, hostileHeaders(random), hostileMethod(random));
        } catch (error) {
          return `no answer: ${(error as Error).message}`;
        }
        return answerProblem(answer, documented);
      });
      const taken = received.length;
      const ok = await send(agents[0] as Agent, url, JSON.stringify(template), {});
      assert.equal(ok.status, 200, ok.text);
      assert.equal(received.length, taken + 1, 'still serving: a real record is taken');
      assert.ok(
        received.every(
          (taken) => typeof taken.reviewUID === 'string' && typeof taken.user.username === 'string',
        ),
        'only whole records reach the join',
      );
      assert.ok(heapMiB() - before < HEAP_GROWTH_MIB, 'the heap stays within its bound');
    } finally {
      await Promise.all(agents.map((agent) => agent.close()));
      await server.close();
    }
    figures.peer = INPUTS.peer;
  });

  it(`the UI: ${INPUTS.ui} hostile requests at a real kubediff ui`, async () => {
    const random = seededRandom(SEED + 3);
    const state = path.join(dir, 'ui-state.db');
    writeGeneratedHistory(state, {
      events: 300,
      start: Date.now() - 3_600_000,
      stepMs: 10_000,
      namespaces: 3,
      objects: 30,
    });
    const tokenFile = path.join(dir, 'ui-token');
    await writeFile(tokenFile, `${SECRET}\n`, { mode: 0o600 });
    const ui = runKubediff(['ui', '--state', state, '--listen', '127.0.0.1:0', '--token-file', tokenFile], {
      timeoutMs: 120_000,
    });
    const origin = (await ui.waitForStderr(/serving the change history on (http:\/\/[^/\s]+)\//))[1]!;
    const { port } = new URL(origin);
    const agent = new Agent({ pipelining: 0 });
    const routes = [
      '/',
      '/healthz',
      '/api/v1/facets',
      '/api/v1/timeline',
      '/api/v1/events',
      '/api/v1/object',
      '/assets/app.ts',
    ];
    const documented = new Set([200, 304, 400, 401, 404, 405, 414, 421, 431, 503]);
    /** A request through a raw socket, for what an HTTP client would refuse to send. */
    const raw = (target: string, method: string, token: boolean) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1');
        let text = '';
        socket.setEncoding('latin1');
        socket.on('data', (chunk: string) => {
          text += chunk;
        });
        socket.on('error', reject);
        socket.on('close', () => {
          const [head = '', ...rest] = text.split('\r\n\r\n');
          let body = rest.join('\r\n\r\n');
          // Chunked: the sizes between the chunks out.
          if (/transfer-encoding: chunked/i.test(head)) body = body.replace(/(^|\r\n)[0-9a-f]+\r\n/gi, '');
          resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0), text: body.trim() });
        });
        // Written, not ended: as HTTP clients do, the socket is closed by the server (Connection: close).
        socket.write(
          `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${token ? `Authorization: Bearer ${SECRET}\r\n` : ''}Connection: close\r\n\r\n`,
          'latin1',
        );
      });
    const answers: string[] = [];
    try {
      await each(INPUTS.ui, random, async () => {
        const target = hostileUiTarget(random, routes);
        const token = random() < 0.9;
        const method =
          random() < 0.93
            ? 'GET'
            : (['HEAD', 'POST', 'DELETE', 'OPTIONS', 'TRACE'] as const)[Math.floor(random() * 5)]!;
        let answer: { status: number; text: string };
        try {
          if (random() < 0.15) answer = await raw(target, method, token);
          else {
            const response = await request(`${origin}${target}`, {
              method: method as 'GET',
              dispatcher: agent,
              headers: token ? { authorization: `Bearer ${SECRET}` } : {},
            });
            answer = { status: response.statusCode, text: await response.body.text() };
          }
        } catch (error) {
          // The client refused to send it (an invalid URL): not a request kubediff saw.
          if (/invalid|URL/i.test((error as Error).message)) return undefined;
          return `no answer: ${(error as Error).message}`;
        }
        answers.push(answer.text.slice(0, 2_000));
        if (!documented.has(answer.status))
          return `${method} ${JSON.stringify(target.slice(0, 160))}: status ${answer.status} ${answer.text.slice(0, 100)}`;
        const body = answer.text;
        if (
          answer.status >= 400 &&
          method !== 'HEAD' &&
          body !== '' &&
          !/^\{"error":"[\s\S]*"\}\s*$/.test(body.trim())
        )
          return `${method} ${target.slice(0, 120)}: not a JSON error: ${body.slice(0, 120)}`;
        return undefined;
      });
      const alive = await request(`${origin}/healthz`, { dispatcher: agent });
      assert.equal(alive.statusCode, 200, 'still serving');
      await alive.body.text();
      const peakRss =
        Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${ui.pid}/status`, 'utf8'))?.[1]) / 1024;
      assert.ok(peakRss < 300, `peak RSS ${peakRss.toFixed(0)} MiB (bound 300 MiB)`);
    } finally {
      await agent.close();
    }
    const stopped = await ui.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.doesNotMatch(stopped.stderr, /\n\s+at .+:\d+:\d+/, 'no stack trace');
    await assertNoLeaks([
      { name: 'UI answers', read: () => answers.join('\n'), expect: /"error"/ },
      { name: 'UI stderr', read: () => stopped.stderr, expect: /serving the change history/ },
    ]);
    figures.ui = INPUTS.ui;
  });

  it(`objects through the real API server: ${INPUTS.objects} objects of hostile values, annotations and managers, into every sink`, async () => {
    const random = seededRandom(SEED + 4);
    const admin: KubeAdmin = adminClient();
    const ns = await admin.createNamespace('hostile');
    const receivers: HttpReceiver[] = [];
    try {
      const slack = await HttpReceiver.start({
        respond: (request) => {
          const problems = blockKitProblems(JSON.parse(request.body));
          return problems.length > 0 ? { status: 400, body: problems.join('; ') } : undefined;
        },
      });
      const chats = {} as Record<ChatPlatformName, HttpReceiver>;
      for (const name of Object.keys(CHAT_PLATFORMS) as ChatPlatformName[]) {
        chats[name] = await HttpReceiver.start({
          respond: (request) => {
            const problems = payloadProblems(name, request.body);
            return problems.length > 0
              ? { status: 400, body: problems.join('; ') }
              : { status: name === 'discord' ? 204 : 200, body: '' };
          },
        });
      }
      const webhook = await HttpReceiver.start();
      receivers.push(slack, webhook, ...Object.values(chats));
      const config = path.join(dir, 'objects.yaml');
      await writeFile(
        config,
        JSON.stringify({
          namespaces: [ns],
          resources: ['configmaps'],
          redact: [{ path: '/data/secret', resources: ['configmaps'] }],
          clusterName: 'hostile',
          sinks: [
            { type: 'stdout', format: 'pretty', color: false },
            { type: 'webhook', url: webhook.url('/hook') },
            { type: 'slack', webhookUrl: slack.url('/services/T/B/X'), minInterval: '0s' },
            ...Object.entries(chats).map(([type, receiver]) => ({
              type,
              webhookUrl: receiver.url('/hook'),
              minInterval: '0s',
            })),
          ],
        }),
      );
      const watch = runKubediff(['watch', '--kubeconfig', testCluster().kubeconfigPath, '-c', config], {
        timeoutMs: 120_000,
      });
      await watch.waitForStderr(/watching \d+ resource types?/, 90_000);
      const configmaps = `/api/v1/namespaces/${ns}/configmaps`;
      let strings = 0;
      const hostile = () => {
        strings++;
        return hostileText(random).replace(/[\ud800-\udfff]/g, '?');
      };
      for (let n = 0; n < INPUTS.objects; n++) {
        const manager =
          hostileText(random, 2)
            .replace(/[^\x20-\x7e]/g, '')
            .slice(0, 128) || 'm';
        strings++;
        const body = {
          metadata: {
            name: `cm-${n}`,
            annotations: { 'example.com/note': hostile(), 'example.com/other': hostile() },
          },
          data: { a: hostile(), 'b.c': hostile(), secret: `${CANARY}${n}-${hostile()}` },
        };
        const created = await admin.request('POST', configmaps, { body, query: { fieldManager: manager } });
        assert.ok(created.status === 201, `create: ${created.status} ${created.text.slice(0, 200)}`);
        const patched = await admin.request('PATCH', `${configmaps}/cm-${n}`, {
          body: { data: { a: hostile(), secret: `${CANARY}${n}-patched` } },
          contentType: 'application/merge-patch+json',
          query: { fieldManager: manager },
        });
        assert.ok(patched.status === 200, `patch: ${patched.status} ${patched.text.slice(0, 200)}`);
      }
      await admin.create(configmaps, { metadata: { name: 'sentinel' }, data: { done: 'yes' } });
      await watch.waitForStdout(`ADDED   configmaps ${ns}/sentinel`, 90_000);
      const stopped = await watch.stop('SIGTERM', 90_000);
      assert.equal(stopped.code, 0, stopped.stderr.slice(-2_000));
      assert.doesNotMatch(stopped.stderr, /not delivered|refused|HTTP 400|\n\s+at .+:\d+:\d+/);
      // Every platform took every message: nothing it would act on, nothing over its limits.
      for (const receiver of receivers)
        for (const request of receiver.requests)
          assert.ok(
            'status' in request.reply && request.reply.status < 300,
            `${request.path}: ${JSON.stringify(request.reply).slice(0, 300)}`,
          );
      assert.ok(
        Object.values(chats).every((receiver) => receiver.requests.length > 0),
        'every chat platform got messages',
      );
      assert.equal((stopped.stdout.match(/^\S+ UPDATED configmaps /gm) ?? []).length, INPUTS.objects);
      assert.ok(
        ![...'\u202e\u200b\u2066\u0000\u001b'].some((character) => stopped.stdout.includes(character)),
        'the terminal sees escapes only',
      );
      await assertNoLeaks([
        { name: 'stdout (pretty)', read: () => stopped.stdout, expect: /<redacted sha256:/ },
        { name: 'stderr', read: () => stopped.stderr },
        receiverSource('webhook', webhook, /redacted sha256:/),
        receiverSource('slack', slack, /changes? /),
        ...Object.entries(chats).map(([name, receiver]) => receiverSource(name, receiver)),
      ]);
      figures.objects = strings;
      console.log(
        `objects: ${INPUTS.objects} objects, ${INPUTS.objects * 2} writes, ${strings} hostile strings`,
      );
    } finally {
      await Promise.all(receivers.map((receiver) => receiver.close()));
      await admin.deleteNamespace(ns);
      await admin.close();
    }
  });

  it(`forged admission reviews: 1 to 6 before each real write of ${INPUTS.forgedRounds} rounds through a real API server; none names its user`, {
    skip: needsSharedEtcd(),
  }, async () => {
    const random = seededRandom(SEED + 7);
    const pki = makeTestPki();
    const files = { cert: path.join(dir, 'forged.crt'), key: path.join(dir, 'forged.key') };
    await writeFile(files.cert, pki.serverCert);
    await writeFile(files.key, pki.serverKey);
    const [port] = (await freePorts(1)) as [number];
    // As EKS, GKE and AKS: the API server presents no credentials, so the endpoint takes anyone.
    const api = await startAdmissionApiserver();
    const admin = new KubeAdmin(api);
    const agent = new Agent({ connect: { ca: pki.caPem } });
    let unregister: (() => Promise<void>) | undefined;
    try {
      const ns = await admin.createNamespace('forged');
      const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}`;
      await admin.create(`${rbac}/roles`, {
        metadata: { name: 'editor' },
        rules: [
          { apiGroups: [''], resources: ['configmaps'], verbs: ['*'] },
          { apiGroups: ['apps'], resources: ['deployments', 'deployments/scale'], verbs: ['*'] },
        ],
      });
      const writers = { bob: admin.as(api.tokens.bob), mallory: admin.as(api.tokens.mallory) };
      for (const user of Object.keys(writers)) {
        await admin.create(`${rbac}/rolebindings`, {
          metadata: { name: `${user}-edit` },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'editor' },
          subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: user }],
        });
      }
      const watch = runKubediff(
        [
          'watch',
          '--kubeconfig',
          api.kubeconfigPath,
          '-o',
          'json',
          '-n',
          ns,
          '-r',
          'configmaps',
          '-r',
          'deployments',
          '--admission-listen',
          `127.0.0.1:${port}`,
          '--admission-cert',
          files.cert,
          '--admission-key',
          files.key,
          '--admission-allow-unauthenticated',
        ],
        { timeoutMs: 120_000, checkEvents: true },
      );
      await watch.waitForStderr(/watching \d+ resource types?/, 90_000);
      unregister = await registerWebhook(
        admin,
        await admissionWebhookConfiguration({
          name: `kubediff-forged-${ns}`,
          url: `https://127.0.0.1:${port}/review`,
          caPem: pki.caPem,
        }),
      );
      const configmaps = `/api/v1/namespaces/${ns}/configmaps`;
      const deployments = `/apis/apps/v1/namespaces/${ns}/deployments`;
      const eventOf = (type: TestEvent['type'], name: string, since: number) =>
        watch.waitForEvent((event) => event.type === type && event.object.name === name, {
          since,
          description: `${type} ${name}`,
        });
      // The API server takes the webhook into use a moment after it is registered.
      for (let attempt = 0; ; attempt++) {
        assert.ok(attempt < 100, 'the webhook was never called');
        const since = watch.events.length;
        await writers.bob.create(configmaps, { metadata: { name: `probe-${attempt}` } });
        if ((await eventOf('ADDED', `probe-${attempt}`, since)).by?.user) break;
      }
      // Who the forger names: alice, as the API server would.
      const alice = { username: 'alice', uid: 'alice-uid', groups: ['devs', 'system:authenticated'] };
      const forged = { reviews: 0, notAllowed: [] as string[] };
      const outcomes = { exact: 0, ambiguous: 0 };
      const configMap = {
        resource: { group: '', version: 'v1', resource: 'configmaps' },
        kind: { group: '', version: 'v1', kind: 'ConfigMap' },
      };
      /**
       * Reads the object as a forger can, posts 1 to 6 forged reviews of its next write (`predict`: what
       * the forger expects it to become), makes the write as `writer`, and says what is wrong with the
       * event it made: it must name the writer exactly, or nobody (ambiguous).
       */
      const forgedBefore = async (
        write: { writer: keyof typeof writers; path: string; make: () => Promise<unknown> },
        target: Omit<ForgeryTarget, 'current' | 'predicted'> & {
          predict: (current: JsonObject) => JsonObject;
        },
        expected: { type: TestEvent['type']; name: string },
      ): Promise<string | undefined> => {
        const { status: _status, ...current } = (await admin.get(write.path)) as unknown as JsonObject;
        const predicted = target.predict(current);
        for (let n = 1 + Math.floor(random() * 6); n > 0; n--) {
          const body = forgedReview(random, { ...target, current, predicted }, alice);
          const answer = await send(agent, `https://127.0.0.1:${port}/review`, body, {
            'content-type': 'application/json',
          });
          forged.reviews++;
          if (answer.status !== 200 || !answer.text.includes('"allowed":true'))
            forged.notAllowed.push(`${answer.status} ${answer.text.slice(0, 100)}`);
        }
        const since = watch.events.length;
        await write.make();
        const { by } = await eventOf(expected.type, expected.name, since);
        if (by?.match === 'ambiguous' && by.user === undefined) {
          outcomes.ambiguous++;
          return undefined;
        }
        if (by?.match === 'exact' && by.user?.username === write.writer) {
          outcomes.exact++;
          return undefined;
        }
        return `${expected.type} ${expected.name} by ${write.writer} named ${JSON.stringify(by)}`;
      };
      await writers.bob.create(deployments, {
        metadata: { name: 'web' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'c', image: 'busybox:1' }] },
          },
        },
      });
      let replicas = 1;
      await each(INPUTS.forgedRounds, random, async (index) => {
        const since = watch.events.length;
        const name = `cm-${index}`;
        const path = `${configmaps}/${name}`;
        switch (index % 4) {
          case 0: {
            // bob patches a ConfigMap.
            await writers.bob.create(configmaps, { metadata: { name }, data: { v: 'created' } });
            await eventOf('ADDED', name, since);
            const data = { v: `patched-${index}` };
            return forgedBefore(
              { writer: 'bob', path, make: () => writers.bob.patch(path, { data }) },
              { ...configMap, predict: (current) => ({ ...current, data }) },
              { type: 'UPDATED', name },
            );
          }
          case 1: {
            // bob scales the Deployment through its scale subresource.
            replicas = (replicas + 1 + Math.floor(random() * 8)) % 10;
            const spec = { replicas };
            return forgedBefore(
              {
                writer: 'bob',
                path: `${deployments}/web`,
                make: () => writers.bob.patch(`${deployments}/web/scale`, { spec }),
              },
              {
                resource: { group: 'apps', version: 'v1', resource: 'deployments' },
                kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
                predict: (current) => ({ ...current, spec: { ...(current.spec as JsonObject), ...spec } }),
              },
              { type: 'UPDATED', name: 'web' },
            );
          }
          case 2: {
            // bob deletes a ConfigMap.
            await writers.bob.create(configmaps, { metadata: { name }, data: { v: 'doomed' } });
            await eventOf('ADDED', name, since);
            return forgedBefore(
              { writer: 'bob', path, make: () => writers.bob.delete(path) },
              { ...configMap, predict: (current) => current },
              { type: 'DELETED', name },
            );
          }
          default: {
            // mallory deletes a ConfigMap a finalizer holds (an UPDATED), then removes the finalizer (DELETED).
            await writers.mallory.create(configmaps, {
              metadata: { name, finalizers: ['test.kubediff.io/hold'] },
              data: { v: 'held' },
            });
            await eventOf('ADDED', name, since);
            const withMetadata = (current: JsonObject, changed: JsonObject) => ({
              ...current,
              metadata: { ...(current.metadata as JsonObject), ...changed },
            });
            const deleting = await forgedBefore(
              { writer: 'mallory', path, make: () => writers.mallory.delete(path) },
              {
                ...configMap,
                predict: (current) => withMetadata(current, { deletionTimestamp: new Date().toISOString() }),
              },
              { type: 'UPDATED', name },
            );
            const releasing = await forgedBefore(
              {
                writer: 'mallory',
                path,
                make: () => writers.mallory.patch(path, { metadata: { finalizers: null } }),
              },
              { ...configMap, predict: (current) => withMetadata(current, { finalizers: null }) },
              { type: 'DELETED', name },
            );
            return deleting ?? releasing;
          }
        }
      });
      assert.deepEqual(forged.notAllowed, [], 'every forged review answered allowed');
      assert.deepEqual(
        watch.events.filter((event) => event.by?.user?.username === 'alice').map((event) => event.id),
        [],
        "no event names the forger's user",
      );
      assert.ok(
        outcomes.exact > 0,
        'forgeries that fail their checks name nothing: the real writer is named',
      );
      const stopped = await watch.stop('SIGTERM', 60_000);
      assert.equal(stopped.code, 0, stopped.stderr.slice(-2_000));
      assert.doesNotMatch(stopped.stderr, /\n\s+at .+:\d+:\d+/, 'no stack trace');
      figures.forged = forged.reviews;
      console.log(
        `forged reviews: ${forged.reviews} before ${INPUTS.forgedRounds} rounds of real writes; ` +
          `${outcomes.exact} named their writer exactly, ${outcomes.ambiguous} nobody (ambiguous)`,
      );
    } finally {
      await unregister?.().catch(() => {});
      await agent.close();
      await admin.close();
      await api.stop();
    }
  });
});
