// The admission webhook (docs/who.md): where kubediff receives the API server's AdmissionReviews, how
// the sender authenticates (or that it cannot: managed clusters), how long a change waits for its review,
// and the bounds; and --peers, the other replicas that get every record this one receives. Flags win over
// the config file's `admission:` block, key by key; the bearer token comes from the file's
// `admission.token` (with ${VAR}) or KUBEDIFF_ADMISSION_TOKEN, never from a flag (a flag shows in `ps`).
import { WHO_JOIN_DEFAULTS } from '../events/who-join.ts';
import { parsePeerAddress } from '../service/peer-address.ts';
import { parseDurationSetting } from '../util/duration.ts';
import { UsageError } from '../util/errors.ts';
import { parseListenAddress } from '../util/http-server.ts';
import { parseSize } from '../util/size.ts';
import type { ConfigInput } from './schema.ts';

export interface RawAdmissionFlags {
  admissionListen?: string;
  admissionCert?: string;
  admissionKey?: string;
  admissionClientCa?: string;
  admissionAllowUnauthenticated?: boolean;
  peers?: string;
}

export interface AdmissionSettings {
  listen: string;
  certFile: string;
  keyFile: string;
  clientCAFile?: string;
  clientNames?: string[];
  token?: string;
  waitMs: number;
  maxRecords: number;
  maxRequestBytes: number;
}

export const ADMISSION_DEFAULTS = {
  maxRecords: 50_000,
  maxRequestBytes: 8 * 1024 * 1024,
} as const;

type Env = Readonly<Record<string, string | undefined>>;

/** The admission webhook's settings, or undefined when it is not configured. */
export function admissionSettingsFrom(
  flags: RawAdmissionFlags,
  file: ConfigInput['admission'] | undefined,
  env: Env,
): AdmissionSettings | undefined {
  const listen = flags.admissionListen?.trim() || file?.listen;
  const given = [
    ['--admission-cert', flags.admissionCert],
    ['--admission-key', flags.admissionKey],
    ['--admission-client-ca', flags.admissionClientCa],
    ['--admission-allow-unauthenticated', flags.admissionAllowUnauthenticated],
  ].find(([, value]) => value !== undefined);
  if (!listen) {
    if (given)
      throw new UsageError(`${given[0]} applies to the admission webhook: add --admission-listen <addr>.`);
    return undefined;
  }
  parseListenAddress(listen, '--admission-listen');
  const certFile = flags.admissionCert ?? file?.certFile;
  const keyFile = flags.admissionKey ?? file?.keyFile;
  if (!certFile || !keyFile) {
    throw new UsageError(
      'the admission webhook serves HTTPS only (the API server calls no other): give its certificate and key with --admission-cert and --admission-key (or admission.certFile and admission.keyFile).',
    );
  }
  const clientCAFile = flags.admissionClientCa ?? file?.clientCAFile;
  const token = file?.token ?? env.KUBEDIFF_ADMISSION_TOKEN;
  const unauthenticated = flags.admissionAllowUnauthenticated ?? file?.allowUnauthenticated ?? false;
  if (!clientCAFile && !token && !unauthenticated) {
    throw new UsageError(
      "the admission webhook must authenticate its sender: give --admission-client-ca <file> (the CA of the API server's client certificate), or a bearer token in $KUBEDIFF_ADMISSION_TOKEN, or both; on a cluster whose API server cannot authenticate to webhooks (EKS, GKE, AKS), say so with --admission-allow-unauthenticated (docs/who.md).",
    );
  }
  if ((clientCAFile || token) && unauthenticated) {
    throw new UsageError(
      "--admission-allow-unauthenticated contradicts the admission webhook's client CA or token: drop one or the other.",
    );
  }
  return {
    listen,
    certFile,
    keyFile,
    ...(clientCAFile ? { clientCAFile } : {}),
    ...(file?.clientNames && file.clientNames.length > 0 ? { clientNames: file.clientNames } : {}),
    ...(token ? { token } : {}),
    waitMs:
      file?.wait !== undefined
        ? parseDurationSetting('admission.wait', file.wait, { allowZero: true })
        : WHO_JOIN_DEFAULTS.waitMs,
    maxRecords: file?.maxRecords ?? ADMISSION_DEFAULTS.maxRecords,
    maxRequestBytes:
      file?.maxRequestSize !== undefined
        ? parseSize('admission.maxRequestSize', file.maxRequestSize)
        : ADMISSION_DEFAULTS.maxRequestBytes,
  };
}

/** --peers, or the file's `peers:`; it needs a listener (whose certificate the replicas share). */
export function peersFrom(
  flags: RawAdmissionFlags,
  file: string | undefined,
  listeners: readonly (string | undefined)[],
): string | undefined {
  const address = flags.peers?.trim() || file;
  if (!address) return undefined;
  parsePeerAddress(address, flags.peers ? '--peers' : 'peers');
  if (!listeners.some(Boolean)) {
    throw new UsageError(
      `--peers ${address}: the replicas post each other the records of --admission-listen or --audit-listen, with its certificate; add one of them.`,
    );
  }
  return address;
}
