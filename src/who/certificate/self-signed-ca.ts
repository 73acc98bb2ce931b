// A certificate authority of kubediff's own and the serving certificate it signs, for an admission webhook
// whose certificate kubediff manages (managed-certificate.ts). Node's crypto makes the keys (ECDSA P-256)
// and checks certificates, but writes none: pkijs (with asn1js) encodes and signs them, through Node's
// WebCrypto. The CA's key signs the one serving certificate and is dropped: it is never stored, so the
// Secret that holds the serving key holds nothing that could sign another certificate.
//
// The serving certificate carries the Service's DNS names, and both server and client authentication:
// the replicas present it to each other (peer-forwarder.ts).
export interface CertificateSet {
  /** The CA, PEM. */
  caPem: string;
  /** The serving certificate, PEM. */
  certPem: string;
  /** Its key, PKCS #8 PEM. */
  keyPem: string;
}

export interface CertificateRequest {
  /** The names the API server calls (the Service's): the first is also the subject's CN. */
  dnsNames: readonly string[];
  /** The CA's subject CN. */
  caName: string;
  notBefore: Date;
  notAfter: Date;
}

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const OID = {
  commonName: '2.5.4.3',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;
/** keyUsage bits, as the first (and only) byte of the BIT STRING: RFC 5280 numbers them from the left. */
const DIGITAL_SIGNATURE = 0x80;
const KEY_CERT_SIGN = 0x04;
const CRL_SIGN = 0x02;

/** A new CA and a serving certificate for `request.dnsNames` that it signed. */
export async function makeCertificateSet(request: CertificateRequest): Promise<CertificateSet> {
  // Imported only here: a watch whose certificate is not managed loads none of it.
  const [pkijs, asn1js] = await Promise.all([import('pkijs'), import('asn1js')]);
  // The global WebCrypto (Node's own), typed as pkijs expects it.
  const { subtle } = globalThis.crypto;
  const caKeys = await subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
  const keys = await subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);

  const name = (commonName: string) =>
    new pkijs.RelativeDistinguishedNames({
      typesAndValues: [
        new pkijs.AttributeTypeAndValue({
          type: OID.commonName,
          value: new asn1js.Utf8String({ value: commonName }),
        }),
      ],
    });
  const extension = (extnID: string, value: { toBER(sizeOnly?: boolean): ArrayBuffer }, critical = false) =>
    new pkijs.Extension({ extnID, critical, extnValue: value.toBER(false) });
  const keyUsage = (bits: number) =>
    new asn1js.BitString({ valueHex: new Uint8Array([bits]).buffer, unusedBits: trailingZeros(bits) });
  const keyIdentifier = async (key: CryptoKey) =>
    new Uint8Array(await subtle.digest('SHA-1', await subtle.exportKey('raw', key)));

  const certificate = async (fields: {
    subject: string;
    publicKey: CryptoKey;
    signingKey: CryptoKey;
    authorityKeyId: Uint8Array;
    extensions: InstanceType<typeof pkijs.Extension>[];
  }) => {
    const made = new pkijs.Certificate();
    made.version = 2;
    made.serialNumber = new asn1js.Integer({ valueHex: serialNumber().buffer as ArrayBuffer });
    made.issuer = name(request.caName);
    made.subject = name(fields.subject);
    made.notBefore.value = request.notBefore;
    made.notAfter.value = request.notAfter;
    await made.subjectPublicKeyInfo.importKey(fields.publicKey);
    made.extensions = [
      ...fields.extensions,
      extension(
        OID.subjectKeyIdentifier,
        new asn1js.OctetString({ valueHex: (await keyIdentifier(fields.publicKey)).buffer as ArrayBuffer }),
      ),
      extension(
        OID.authorityKeyIdentifier,
        new pkijs.AuthorityKeyIdentifier({
          keyIdentifier: new asn1js.OctetString({ valueHex: fields.authorityKeyId.buffer as ArrayBuffer }),
        }).toSchema(),
      ),
    ];
    await made.sign(fields.signingKey, 'SHA-256');
    return pem('CERTIFICATE', made.toSchema(true).toBER(false));
  };

  const caKeyId = await keyIdentifier(caKeys.publicKey);
  const caPem = await certificate({
    subject: request.caName,
    publicKey: caKeys.publicKey,
    signingKey: caKeys.privateKey,
    authorityKeyId: caKeyId,
    extensions: [
      extension(
        OID.basicConstraints,
        new pkijs.BasicConstraints({ cA: true, pathLenConstraint: 0 }).toSchema(),
        true,
      ),
      extension(OID.keyUsage, keyUsage(KEY_CERT_SIGN | CRL_SIGN), true),
    ],
  });
  const [first = ''] = request.dnsNames;
  const certPem = await certificate({
    subject: first,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    authorityKeyId: caKeyId,
    extensions: [
      extension(OID.basicConstraints, new pkijs.BasicConstraints({ cA: false }).toSchema(), true),
      extension(OID.keyUsage, keyUsage(DIGITAL_SIGNATURE), true),
      extension(
        OID.extKeyUsage,
        new pkijs.ExtKeyUsage({ keyPurposes: [OID.serverAuth, OID.clientAuth] }).toSchema(),
      ),
      extension(
        OID.subjectAltName,
        new pkijs.GeneralNames({
          names: request.dnsNames.map((value) => new pkijs.GeneralName({ type: 2, value })),
        }).toSchema(),
      ),
    ],
  });
  const keyPem = pem('PRIVATE KEY', await subtle.exportKey('pkcs8', keys.privateKey));
  return { caPem, certPem, keyPem };
}

/** 16 random bytes, positive (the top bit clear), as RFC 5280 asks of a serial number. */
function serialNumber(): Uint8Array {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x01;
  return bytes;
}

function trailingZeros(bits: number): number {
  let count = 0;
  while (count < 7 && (bits & (1 << count)) === 0) count++;
  return count;
}

function pem(label: string, der: ArrayBuffer): string {
  const lines =
    Buffer.from(der)
      .toString('base64')
      .match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}
