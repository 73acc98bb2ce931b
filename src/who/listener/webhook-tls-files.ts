// The files a webhook listener serves TLS from (docs/who.md, "The certificate"): read with one sentence per
// file that cannot be read, or taken from a certificate source that manages them; a stamp that says when
// the files changed (a Secret volume swaps a symlink), so that they are read again.
import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { errorMessage, UsageError } from '../../util/errors.ts';

export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
}

/** Where they come from: the settings' files, or a source's current certificate and key. */
export interface TlsFileSettings {
  /** The settings' name in messages: `admission`, `audit`. */
  settingsKey: string;
  certFile?: string | undefined;
  keyFile?: string | undefined;
  clientCAFile?: string | undefined;
  certificate?: { readonly current: { cert: Buffer; key: Buffer } } | undefined;
}

/** The SHA-256 fingerprint of the first certificate of a PEM file, or of a DER certificate. */
export function fingerprintOf(certificate: Buffer): string {
  return new X509Certificate(certificate).fingerprint256;
}

export function readTlsFiles(options: TlsFileSettings): TlsFiles {
  const read = (file: string, key: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new UsageError(
        `cannot read ${options.settingsKey}.${key} ${file}: ${errorMessage(error)}; check the path.`,
      );
    }
  };
  const served = options.certificate?.current;
  return {
    cert: served ? served.cert : read(options.certFile ?? '', 'certFile'),
    key: served ? served.key : read(options.keyFile ?? '', 'keyFile'),
    ...(options.clientCAFile ? { ca: read(options.clientCAFile, 'clientCAFile') } : {}),
  };
}

export function secureOptions(files: TlsFiles): { cert: Buffer; key: Buffer; ca?: Buffer } {
  return { cert: files.cert, key: files.key, ...(files.ca ? { ca: files.ca } : {}) };
}

/** What says a file changed: size, mtime and inode of each (a Secret volume swaps a symlink). */
export function stampOf(options: TlsFileSettings): string {
  return [options.certFile, options.keyFile, options.clientCAFile]
    .map((file) => {
      if (!file) return '';
      try {
        const stat = statSync(file);
        return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
      } catch {
        return 'missing';
      }
    })
    .join('|');
}
