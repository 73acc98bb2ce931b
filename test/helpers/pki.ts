// Throwaway certificates for the tests, made with openssl (as an operator would make them): a CA, a
// server certificate for 127.0.0.1 and a client certificate. Used by the TLS proxy in front of the API
// server and by the PostgreSQL and Kafka test servers.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface TestPki {
  caPem: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** The client certificate's subject CN. */
  clientName: string;
  /** More client certificates from the same CA, by their subject CN (`otherClients`). */
  others: Record<string, { cert: string; key: string }>;
}

/**
 * A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl. The client's
 * subject is CN=kubediff-test-client unless `clientSubject` says otherwise (for the API server, O
 * names the user's groups).
 */
export function makeTestPki(
  options: { clientSubject?: { cn: string; o?: string }; otherClients?: readonly string[] } = {},
): TestPki {
  const dir = mkdtempSync(path.join(tmpdir(), 'kubediff-test-pki-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) =>
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  const clientName = options.clientSubject?.cn ?? 'kubediff-test-client';
  const organization = options.clientSubject?.o;
  try {
    openssl(
      'req',
      '-x509',
      ...newKey,
      '-keyout',
      file('ca.key'),
      '-out',
      file('ca.crt'),
      '-days',
      '1',
      '-subj',
      '/CN=kubediff-test-ca',
    );
    const sign = (name: string, subject: string, extensions: string) => {
      writeFileSync(file(`${name}.ext`), extensions);
      openssl(
        'req',
        ...newKey,
        '-keyout',
        file(`${name}.key`),
        '-out',
        file(`${name}.csr`),
        '-subj',
        subject,
      );
      openssl(
        'x509',
        '-req',
        '-in',
        file(`${name}.csr`),
        '-CA',
        file('ca.crt'),
        '-CAkey',
        file('ca.key'),
        '-CAcreateserial',
        '-out',
        file(`${name}.crt`),
        '-days',
        '1',
        '-extfile',
        file(`${name}.ext`),
      );
    };
    sign(
      'server',
      '/CN=127.0.0.1',
      'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
    );
    sign(
      'client',
      `${organization ? `/O=${organization}` : ''}/CN=${clientName}`,
      'extendedKeyUsage=clientAuth\n',
    );
    const read = (name: string) => readFileSync(file(name), 'utf8');
    const others: TestPki['others'] = {};
    for (const [index, name] of (options.otherClients ?? []).entries()) {
      sign(`other-${index}`, `/CN=${name}`, 'extendedKeyUsage=clientAuth\n');
      others[name] = { cert: read(`other-${index}.crt`), key: read(`other-${index}.key`) };
    }
    return {
      caPem: read('ca.crt'),
      serverCert: read('server.crt'),
      serverKey: read('server.key'),
      clientCert: read('client.crt'),
      clientKey: read('client.key'),
      clientName,
      others,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
