// What "who" is started with (startWho, start.ts): each webhook's settings once flags, the config
// file and the environment are merged and checked (audit/config.ts, admission/config.ts, config.ts),
// --peers, and what the watch's normalizer is made of, so that a large review is digested alike.
import type { WebhookEndpoint } from './listener/webhook-endpoint.ts';

export interface AuditSettings extends WebhookEndpoint {
  waitMs: number;
  windowMs: number;
  maxPending: number;
  maxRecords: number;
}

/** A certificate kubediff makes, renews and serves (certificate/managed-certificate.ts). */
export interface ManagedCertificateSettings {
  /** kubediff's namespace ($POD_NAMESPACE, else the ServiceAccount's): the Secret's and the Service's. */
  namespace: string;
  secret: string;
  service: string;
  webhookConfiguration: string;
  /** KUBEDIFF_ADMISSION_CERT_CHECK_INTERVAL: how often the Secret is read. */
  checkIntervalMs?: number;
}

export interface AdmissionSettings extends WebhookEndpoint {
  waitMs: number;
  maxRecords: number;
  managedCertificate?: ManagedCertificateSettings;
}

export interface WhoSettings {
  /** --audit-listen: the audit webhook (docs/audit.md). */
  audit?: AuditSettings | undefined;
  /** --admission-listen: the admission webhook (docs/who.md). */
  admission?: AdmissionSettings | undefined;
  /** --peers: the other replicas, which get every record this one receives (docs/who.md). */
  peers?: string | undefined;
  /** The watch's ignored paths and redaction key: what its normalizer is made of. */
  ignoredPaths: readonly string[];
  redaction: { key?: string | undefined };
  /** The bytes of changes the join may hold while they wait for their user (src/util/memory-budget.ts). */
  memory: { whoPendingBytes: number };
}
