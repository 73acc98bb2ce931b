// src/who/audit/audit-records.ts: an audit EventList becomes the few fields the join needs; request and
// response bodies are read for the response's uid and resourceVersion only, so a Secret in them is not
// kept; reads, failures and early stages are not records.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AuditBodyError, auditRecordsOf } from '../../../src/who/audit/audit-records.ts';
import { assertNoLeaks, secretValue } from '../../helpers/leak-check.ts';
import { seededRandom } from '../../helpers/random-json.ts';

function item(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: 'RequestResponse',
    auditID: 'a1',
    stage: 'ResponseComplete',
    requestURI: '/api/v1/namespaces/shop/configmaps/web',
    verb: 'patch',
    user: { username: 'alice', uid: 'alice-uid', groups: ['devs', 'system:authenticated'] },
    impersonatedUser: { username: 'bob' },
    sourceIPs: ['10.1.2.3'],
    userAgent: 'kubectl/v1.36.3 (linux/amd64) kubernetes/abc',
    objectRef: { resource: 'configmaps', namespace: 'shop', name: 'web', apiVersion: 'v1' },
    responseStatus: { metadata: {}, code: 200 },
    responseObject: { kind: 'ConfigMap', metadata: { name: 'web', uid: 'u1', resourceVersion: '42' } },
    stageTimestamp: '2026-11-22T10:31:07.412345Z',
    ...overrides,
  };
}

const list = (...items: unknown[]) =>
  JSON.stringify({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1', items });

test('a write becomes a record: who, from where, what, and the object it produced', () => {
  assert.deepEqual(auditRecordsOf(list(item())), [
    {
      auditID: 'a1',
      verb: 'patch',
      group: '',
      resource: 'configmaps',
      namespace: 'shop',
      name: 'web',
      uid: 'u1',
      resourceVersion: '42',
      user: { username: 'alice', groups: ['devs', 'system:authenticated'], uid: 'alice-uid' },
      impersonatedUser: { username: 'bob' },
      userAgent: 'kubectl/v1.36.3 (linux/amd64) kubernetes/abc',
      sourceIPs: ['10.1.2.3'],
      time: Date.parse('2026-11-22T10:31:07.412345Z'),
    },
  ]);
});

test('reads, failed writes, earlier stages and subresource responses are not taken as what a write produced', () => {
  const records = auditRecordsOf(
    list(
      item({ verb: 'get' }),
      item({ verb: 'watch' }),
      item({ stage: 'RequestReceived' }),
      item({ responseStatus: { code: 409 } }),
      item({
        auditID: 'scale',
        objectRef: { resource: 'deployments', apiGroup: 'apps', name: 'web', subresource: 'scale' },
      }),
      item({ auditID: 'del', verb: 'delete', responseObject: { kind: 'Status', details: { uid: 'u9' } } }),
    ),
  );
  assert.deepEqual(
    records.map((record) => [
      record.auditID,
      record.group,
      record.subresource,
      record.uid,
      record.resourceVersion,
    ]),
    [
      ['scale', 'apps', 'scale', undefined, undefined],
      ['del', '', undefined, 'u9', undefined],
    ],
  );
});

test('blocking mode sends one event per list; level Metadata has no response object', () => {
  const [record] = auditRecordsOf(list(item({ level: 'Metadata', responseObject: undefined })));
  assert.equal(record?.uid, undefined);
  assert.equal(record?.name, 'web');
});

test('not an EventList: a clear reason', () => {
  assert.throws(() => auditRecordsOf('{'), AuditBodyError);
  assert.throws(() => auditRecordsOf(JSON.stringify({ kind: 'Event' })), /not an audit.k8s.io EventList/);
  assert.throws(
    () => auditRecordsOf(JSON.stringify({ kind: 'EventList', apiVersion: 'v1', items: [] })),
    /EventList/,
  );
});

test("a Secret's values in request and response objects are not in the records", async () => {
  const random = seededRandom(7);
  const secret = () => ({
    kind: 'Secret',
    metadata: {
      name: 'creds',
      uid: 'u1',
      resourceVersion: '42',
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': secretValue(random, 60) },
    },
    data: { password: Buffer.from(secretValue(random, 30)).toString('base64') },
    stringData: { token: secretValue(random, 30) },
  });
  const records = auditRecordsOf(
    list(
      item({
        objectRef: { resource: 'secrets', namespace: 'shop', name: 'creds', apiVersion: 'v1' },
        requestObject: secret(),
        responseObject: secret(),
      }),
    ),
  );
  assert.equal(records[0]?.resourceVersion, '42');
  await assertNoLeaks([{ name: 'records', read: () => JSON.stringify(records), expect: '"u1"' }]);
});

test('what a sender puts in is capped', () => {
  const [record] = auditRecordsOf(
    list(
      item({
        user: { username: 'x'.repeat(10_000), groups: Array.from({ length: 1000 }, (_, i) => `g${i}`) },
        sourceIPs: Array.from({ length: 100 }, () => '10.0.0.1'),
      }),
    ),
  );
  assert.equal(record?.user.username.length, 256);
  assert.equal(record?.user.groups?.length, 32);
  assert.equal(record?.sourceIPs?.length, 8);
});
