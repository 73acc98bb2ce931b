// `--audit-listen`: the HTTPS endpoint the API server's audit webhook backend posts to (docs/audit.md).
//
// Nobody may inject a fake "who": every request must authenticate (a client certificate and/or a bearer
// token; webhook-listener.ts authenticates, bounds and reloads). The bounds: a body larger than
// `maxRequestBytes` is refused (413), and at most AUDIT_CONCURRENT_REQUESTS bodies are read at once (503
// beyond it: the API server's batch mode retries), so what audit requests hold in memory is at most their
// product. A body is parsed, its records taken (src/who/audit/audit-records.ts) and dropped before the
// answer goes out.

import type { FailureReporter } from '../../util/event-failures.ts';
import type { Logger } from '../../util/log.ts';
import { AUDIT_CONCURRENT_REQUESTS } from '../../util/memory-budget.ts';
import { endpointOf, type WebhookEndpoint } from '../listener/webhook-endpoint.ts';
import { WebhookListener } from '../listener/webhook-listener.ts';
import type { WebhookOutcome } from '../listener/webhook-outcomes.ts';
import type { WebhookRoute } from '../listener/webhook-route.ts';
import type { AuditRecord } from './audit-match.ts';
import { AuditBodyError, auditRecordsOf } from './audit-records.ts';

export interface AuditServerOptions extends WebhookEndpoint {
  reloadIntervalMs?: number;
  /** Where the records go (the join). */
  onRecords: (records: AuditRecord[]) => void;
  /** What the other replicas post (--peers), when they are configured. */
  peerRoute?: WebhookRoute | undefined;
  /** Where a failure to take a request's records is reported (kubediff_event_failures_total). */
  failures?: FailureReporter<'handler'> | undefined;
  log: Logger;
}

export class AuditServer {
  readonly listener: WebhookListener;

  private constructor(listener: WebhookListener) {
    this.listener = listener;
  }

  /** Listens; rejects with a UsageError when the files cannot be read or the port cannot be had. */
  static async start(options: AuditServerOptions): Promise<AuditServer> {
    const listener = await WebhookListener.start({
      name: 'audit webhook',
      settingsKey: 'audit',
      listener: 'audit',
      flag: '--audit-listen',
      requestsMetric: 'kubediff_audit_requests_total',
      ...endpointOf(options),
      maxConcurrentRequests: AUDIT_CONCURRENT_REQUESTS,
      // The API server's batch backend sends a refused batch again.
      busyRetryAfterSeconds: 1,
      ...(options.reloadIntervalMs !== undefined ? { reloadIntervalMs: options.reloadIntervalMs } : {}),
      route: {
        receive: (body) => {
          let records: AuditRecord[];
          try {
            records = auditRecordsOf(body.toString('utf8'));
          } catch (error) {
            const why = error instanceof AuditBodyError ? error.message : 'the body cannot be read';
            return { status: 400, body: '', why };
          }
          return {
            status: 200,
            body: '{}',
            after: () => options.onRecords(records),
          };
        },
      },
      peerRoute: options.peerRoute,
      failures: options.failures,
      log: options.log,
    });
    const instance = new AuditServer(listener);
    options.log.info(
      `receiving audit events on https://${listener.address} (authenticated by ${listener.authentication})`,
    );
    return instance;
  }

  /** host:port actually bound. */
  get address(): string {
    return this.listener.address;
  }

  /** Requests by outcome (for /metrics; the records, the audit source counts). */
  stats(): { requests: ReadonlyMap<WebhookOutcome, number> } {
    return { requests: this.listener.stats().requests };
  }

  close(): Promise<void> {
    return this.listener.close();
  }
}
