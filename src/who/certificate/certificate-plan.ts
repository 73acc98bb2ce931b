// What a managed admission certificate needs next (docs/who.md, "The certificate"), decided from the
// Secret's content alone, so that every replica decides the same. A rotation never serves a certificate
// the API server does not trust yet: `prepare` (within renewBeforeMs of the end: a new CA joins ca.crt and
// the caBundle, the next pair is made), `promote` (overlapMs later: the next pair is served), `trim`
// (overlapMs later still: the old CA leaves ca.crt). A Secret that is empty, or whose serving pair is
// missing, broken, expired, untrusted or without one of the Service's names, is issued anew at once.
import { createPrivateKey, X509Certificate } from 'node:crypto';

/** The Secret's keys, as PEM text. */
export interface CertificateData {
  'tls.crt'?: string;
  'tls.key'?: string;
  'ca.crt'?: string;
  'next.crt'?: string;
  'next.key'?: string;
}

export interface CertificatePolicy {
  /** The names the API server calls: every one must be in the certificate. */
  dnsNames: readonly string[];
  /** A serving certificate (and its CA) is made valid this long. */
  validityMs: number;
  /** It is replaced when less than this is left. */
  renewBeforeMs: number;
  /** A new CA is trusted this long before its certificate is served, an old one this long after. */
  overlapMs: number;
}

/** How far before now a new certificate's validity starts: an API server's clock may be behind ours. */
export const BACKDATE_MS = 5 * 60_000;

export type CertificateStep =
  | { kind: 'serve' }
  | { kind: 'issue'; why: string }
  | { kind: 'prepare'; why: string }
  | { kind: 'promote' }
  | { kind: 'trim' };

interface Pair {
  cert: X509Certificate;
  /** The CA of `ca.crt` that signed it. */
  issuer: X509Certificate;
}

/** What to do with the Secret's `data` at `now`. */
export function planCertificate(
  data: CertificateData,
  now: number,
  policy: CertificatePolicy,
): CertificateStep {
  const bundle = certificatesOf(data['ca.crt']);
  const current = pairOf(data['tls.crt'], data['tls.key'], bundle, policy);
  if (typeof current === 'string') return { kind: 'issue', why: current };
  if (Date.parse(current.cert.validTo) <= now) return { kind: 'issue', why: 'its certificate has expired' };
  const next = pairOf(data['next.crt'], data['next.key'], bundle, policy);
  if (typeof next !== 'string') {
    return now >= generatedAt(next.cert) + policy.overlapMs ? { kind: 'promote' } : { kind: 'serve' };
  }
  if (Date.parse(current.cert.validTo) - now < policy.renewBeforeMs) {
    return { kind: 'prepare', why: `its certificate ends on ${current.cert.validTo}` };
  }
  const others = bundle.filter((ca) => ca.fingerprint256 !== current.issuer.fingerprint256);
  if (others.length > 0 && now >= generatedAt(current.cert) + 2 * policy.overlapMs) return { kind: 'trim' };
  return { kind: 'serve' };
}

/** The new `data` after `step`; `made` is the new CA and serving pair that `issue` and `prepare` need. */
export function applyStep(
  data: CertificateData,
  step: Exclude<CertificateStep, { kind: 'serve' }>,
  now: number,
  made?: { caPem: string; certPem: string; keyPem: string },
): CertificateData {
  const bundle = certificatesOf(data['ca.crt']);
  switch (step.kind) {
    case 'issue':
      return {
        'tls.crt': needed(made).certPem,
        'tls.key': needed(made).keyPem,
        'ca.crt': needed(made).caPem,
      };
    case 'prepare': {
      // The old CAs that still mean something stay: the one that signed what is served, at least.
      const kept = bundle.filter((ca) => Date.parse(ca.validTo) > now).map((ca) => ca.toString());
      return {
        'tls.crt': data['tls.crt'] ?? '',
        'tls.key': data['tls.key'] ?? '',
        'ca.crt': [needed(made).caPem, ...kept].join(''),
        'next.crt': needed(made).certPem,
        'next.key': needed(made).keyPem,
      };
    }
    case 'promote':
      return {
        'tls.crt': data['next.crt'] ?? '',
        'tls.key': data['next.key'] ?? '',
        'ca.crt': data['ca.crt'] ?? '',
      };
    case 'trim': {
      const cert = new X509Certificate(data['tls.crt'] ?? '');
      const issuer = bundle.find((ca) => signedBy(cert, ca));
      return { ...data, 'ca.crt': issuer ? issuer.toString() : (data['ca.crt'] ?? '') };
    }
  }
}

/** The certificates of a PEM bundle, in order; what does not parse is left out. */
export function certificatesOf(pem: string | undefined): X509Certificate[] {
  const blocks = (pem ?? '').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.flatMap((block) => {
    try {
      return [new X509Certificate(block)];
    } catch {
      return [];
    }
  });
}

/** When a certificate kubediff made was made: its validity starts BACKDATE_MS before. */
function generatedAt(cert: X509Certificate): number {
  return Date.parse(cert.validFrom) + BACKDATE_MS;
}

function signedBy(cert: X509Certificate, ca: X509Certificate): boolean {
  return cert.checkIssued(ca) && cert.verify(ca.publicKey);
}

/** The pair, or why it cannot be served. */
function pairOf(
  certPem: string | undefined,
  keyPem: string | undefined,
  bundle: readonly X509Certificate[],
  policy: CertificatePolicy,
): Pair | string {
  if (!certPem || !keyPem) return 'it holds no certificate';
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) return 'its key is not the certificate’s';
  } catch {
    return 'its certificate or key does not load';
  }
  const missing = policy.dnsNames.find((name) => cert.checkHost(name) !== name);
  if (missing) return `its certificate is not for ${missing}`;
  const issuer = bundle.find((ca) => signedBy(cert, ca));
  if (!issuer) return 'no CA of its ca.crt signed its certificate';
  return { cert, issuer };
}

function needed<T>(made: T | undefined): T {
  if (!made) throw new Error('a new certificate set is needed for this step');
  return made;
}
