// The plan of a managed admission certificate (src/who/certificate/certificate-plan.ts), on real certificates
// made by src/who/certificate/self-signed-ca.ts: an empty or broken Secret is issued at once; a certificate near
// its end is renewed in three steps, the new CA trusted before its certificate is served and the old CA
// kept until every replica serves the new one.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  applyStep,
  BACKDATE_MS,
  type CertificateData,
  type CertificatePolicy,
  certificatesOf,
  planCertificate,
} from '../../../src/who/certificate/certificate-plan.ts';
import { makeCertificateSet } from '../../../src/who/certificate/self-signed-ca.ts';

const DAY = 24 * 3600_000;
const names = ['kd-admission.kubediff.svc', 'kd-admission.kubediff.svc.cluster.local'];
const policy: CertificatePolicy = {
  dnsNames: names,
  validityMs: 365 * DAY,
  renewBeforeMs: (365 * DAY) / 3,
  overlapMs: 120_000,
};
const T0 = Date.parse('2026-12-01T00:00:00Z');

const made = (at: number, dnsNames = names, validityMs = policy.validityMs) =>
  makeCertificateSet({
    dnsNames,
    caName: 'kd-admission.kubediff admission CA',
    notBefore: new Date(at - BACKDATE_MS),
    notAfter: new Date(at + validityMs),
  });

describe('the plan of a managed certificate', () => {
  it('an empty Secret, or one without a usable pair, is issued at once', async () => {
    assert.deepEqual(planCertificate({}, T0, policy), { kind: 'issue', why: 'it holds no certificate' });
    const set = await made(T0);
    const issued = applyStep({}, { kind: 'issue', why: '' }, T0, set);
    assert.deepEqual(issued, { 'tls.crt': set.certPem, 'tls.key': set.keyPem, 'ca.crt': set.caPem });
    assert.deepEqual(planCertificate(issued, T0, policy), { kind: 'serve' });
    // What the API server checks: signed by the bundle's CA, for the Service's names, both usages.
    const cert = new X509Certificate(set.certPem);
    const ca = new X509Certificate(set.caPem);
    assert.ok(ca.ca && !cert.ca && cert.verify(ca.publicKey));
    for (const name of names) assert.equal(cert.checkHost(name), name);
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);

    const other = await made(T0);
    const broken: [CertificateData, string][] = [
      [{ ...issued, 'tls.key': other.keyPem }, 'its key is not the certificate’s'],
      [{ ...issued, 'ca.crt': other.caPem }, 'no CA of its ca.crt signed its certificate'],
      [{ ...issued, 'tls.crt': 'not a certificate' }, 'its certificate or key does not load'],
      [{ 'ca.crt': set.caPem }, 'it holds no certificate'],
    ];
    for (const [data, why] of broken)
      assert.deepEqual(planCertificate(data, T0, policy), { kind: 'issue', why });
    const elsewhere = await made(T0, ['kd-admission.other.svc']);
    assert.deepEqual(
      planCertificate(
        { 'tls.crt': elsewhere.certPem, 'tls.key': elsewhere.keyPem, 'ca.crt': elsewhere.caPem },
        T0,
        policy,
      ),
      { kind: 'issue', why: 'its certificate is not for kd-admission.kubediff.svc' },
    );
    assert.deepEqual(planCertificate(issued, T0 + 366 * DAY, policy), {
      kind: 'issue',
      why: 'its certificate has expired',
    });
  });

  it('near its end: the new CA is trusted first, its certificate served after the overlap, the old CA dropped after another', async () => {
    const first = await made(T0);
    const served: CertificateData = {
      'tls.crt': first.certPem,
      'tls.key': first.keyPem,
      'ca.crt': first.caPem,
    };
    // A third of the validity left: renew.
    const renewAt = T0 + 245 * DAY;
    assert.deepEqual(planCertificate(served, T0 + 240 * DAY, policy), { kind: 'serve' });
    const step = planCertificate(served, renewAt, policy);
    assert.equal(step.kind, 'prepare');
    const second = await made(renewAt);
    const prepared = applyStep(served, step as { kind: 'prepare'; why: string }, renewAt, second);
    // Served as before; both CAs trusted, the new one first; the next pair waits.
    assert.equal(prepared['tls.crt'], first.certPem);
    assert.deepEqual(
      certificatesOf(prepared['ca.crt']).map((ca) => ca.toString()),
      [second.caPem, first.caPem],
    );
    assert.equal(prepared['next.crt'], second.certPem);
    assert.deepEqual(planCertificate(prepared, renewAt + policy.overlapMs - 1, policy), { kind: 'serve' });
    const promote = planCertificate(prepared, renewAt + policy.overlapMs, policy);
    assert.deepEqual(promote, { kind: 'promote' });
    const promoted = applyStep(prepared, { kind: 'promote' }, renewAt + policy.overlapMs);
    assert.deepEqual(promoted, {
      'tls.crt': second.certPem,
      'tls.key': second.keyPem,
      'ca.crt': prepared['ca.crt'],
    });
    // The old CA stays while a replica may still serve the old certificate.
    assert.deepEqual(planCertificate(promoted, renewAt + 2 * policy.overlapMs - 1, policy), {
      kind: 'serve',
    });
    assert.deepEqual(planCertificate(promoted, renewAt + 2 * policy.overlapMs, policy), { kind: 'trim' });
    const trimmed = applyStep(promoted, { kind: 'trim' }, renewAt + 2 * policy.overlapMs);
    assert.deepEqual(trimmed, {
      'tls.crt': second.certPem,
      'tls.key': second.keyPem,
      'ca.crt': second.caPem,
    });
    assert.deepEqual(planCertificate(trimmed, renewAt + 3 * policy.overlapMs, policy), { kind: 'serve' });
  });

  it('a certificate made elsewhere that ends within the renewal window is renewed, whatever its own lifetime', async () => {
    const short = await made(T0, names, 3600_000);
    const data = { 'tls.crt': short.certPem, 'tls.key': short.keyPem, 'ca.crt': short.caPem };
    assert.equal(planCertificate(data, T0, policy).kind, 'prepare');
  });
});
