// The sources of "who" of `kubediff watch`, wired in one place: the audit webhook (--audit-listen,
// docs/audit.md) and the admission webhook (--admission-listen, docs/who.md) feed one join stage
// (src/events/who-join.ts); with --peers, what either receives is also posted to the other replicas, and
// what they post is joined here. Without a source there is no join stage and no wait at all.

import type { WatchSettings } from '../config/watch-settings.ts';
import type { Normalizer } from '../diff/normalize.ts';
import type { AdmissionDigests } from '../events/admission-digests.ts';
import type { AdmissionSource } from '../events/admission-match.ts';
import type { AuditSource } from '../events/audit-match.ts';
import type { WhoJoin } from '../events/who-join.ts';
import type { WhoSource } from '../events/who-source.ts';
import type { KubeClient } from '../kube/client.ts';
import type { ResourceType } from '../kube/types.ts';
import type { AdmissionThread } from '../service/admission-thread.ts';
import type { PeerRecords } from '../service/peer-records.ts';
import type { ServiceRuntime } from '../service/service.ts';
import type { WebhookListener, WebhookRoute } from '../service/webhook-listener.ts';
import { UsageError } from '../util/errors.ts';
import type { FailureReporter } from '../util/event-failures.ts';
import type { Lifecycle } from '../util/lifecycle.ts';
import type { Logger } from '../util/log.ts';

export interface WhoWiring {
  /** The join stage, when a source of "who" is configured. */
  readonly stage: WhoJoin | undefined;
  /** The types the watch watches now, on every cluster: reviews of other resources name nothing. */
  watching(types: readonly ResourceType[]): void;
}

interface WhoDeps {
  /** The (first) cluster's client: a managed admission certificate lives there (none in a fleet). */
  client: KubeClient | undefined;
  normalizer: Normalizer;
  service: ServiceRuntime;
  log: Logger;
  lifecycle: Lifecycle;
  /** Where records that fail to join, and changes the join fails to pass on, are reported. */
  failures: FailureReporter<'handler'>;
}

/** What the parts below share: the join and its sources, where records also go, the listeners started. */
interface Wiring extends WhoDeps {
  join: WhoJoin;
  auditSource: AuditSource | undefined;
  admissionSource: AdmissionSource | undefined;
  peerRoute: WebhookRoute | undefined;
  /** Records received from the API server, for the peers (set once they are known). */
  forward: (records: Partial<PeerRecords>) => void;
  listeners: WebhookListener[];
}

export async function startWhoSources(settings: WatchSettings, deps: WhoDeps): Promise<WhoWiring> {
  const { audit, admission } = settings;
  if (!audit && !admission) return { stage: undefined, watching: () => {} };
  const { log } = deps;
  // Imported only here: a watch without a source of "who" loads none of the join's modules.
  const [{ AdmissionDigests }, { AdmissionSource }, { AuditSource }, { WHO_JOIN_DEFAULTS, WhoJoin }] =
    await Promise.all([
      import('../events/admission-digests.ts'),
      import('../events/admission-match.ts'),
      import('../events/audit-match.ts'),
      import('../events/who-join.ts'),
    ]);
  // Records are kept at least as long as a nearest match may reach back.
  const retainMs = Math.max(WHO_JOIN_DEFAULTS.retainMs, audit?.windowMs ?? 0);
  const auditSource = audit
    ? new AuditSource({ windowMs: audit.windowMs, maxRecords: audit.maxRecords, retainMs, log })
    : undefined;
  const admissionSource = admission
    ? new AdmissionSource({ maxRecords: admission.maxRecords, retainMs, log })
    : undefined;
  const join = new WhoJoin(
    {
      waitMs: Math.max(audit?.waitMs ?? 0, admission?.waitMs ?? 0),
      maxPending: audit?.maxPending ?? WHO_JOIN_DEFAULTS.maxPending,
      maxPendingBytes: settings.memory.whoPendingBytes,
      failures: deps.failures,
      log,
    },
    [auditSource, admissionSource].filter(Boolean) as WhoSource<unknown>[],
  );
  const registry = deps.service.metricsRegistry;
  if (registry) {
    // With prom-client, only when the metrics are served.
    const { registerWhoJoinMetrics } = await import('../service/who-metrics.ts');
    registerWhoJoinMetrics(registry, () => join.stats());
  }
  const wiring: Wiring = {
    ...deps,
    join,
    auditSource,
    admissionSource,
    // What the other replicas post: joined here, never forwarded again.
    peerRoute: settings.peers ? await peerRouteFor(join, auditSource, admissionSource) : undefined,
    forward: () => {},
    listeners: [],
  };
  if (audit) await startAudit(audit, wiring);
  const digests = new AdmissionDigests(deps.normalizer);
  const thread = admission ? await startAdmission(admission, settings, digests, wiring) : undefined;
  if (settings.peers) await startPeers(settings.peers, wiring);
  return {
    stage: join,
    watching: (types) => {
      digests.update(types);
      // Large reviews are digested in the admission thread, with the same rules.
      thread?.update(
        types.map((type) => ({ type, redactPaths: deps.normalizer.rulesFor(type).redact.patterns })),
      );
    },
  };
}

async function startAudit(audit: NonNullable<WatchSettings['audit']>, wiring: Wiring): Promise<void> {
  const { endpointOf } = await import('../service/webhook-endpoint.ts');
  const { join, log } = wiring;
  const source = wiring.auditSource as AuditSource;
  // Imported only here: its HTTPS server stays out of a watch without --audit-listen.
  const { AuditServer } = await import('../service/audit-server.ts');
  const server = wiring.lifecycle.use(
    await AuditServer.start({
      ...endpointOf(audit),
      onRecords: (records) => {
        join.offer(source, records);
        wiring.forward({ audit: records });
      },
      peerRoute: wiring.peerRoute,
      failures: wiring.failures,
      log,
    }),
    (server) => server.close(),
  );
  wiring.listeners.push(server.listener);
  wiring.service.observeListener(server.listener.guard);
  wiring.service.observeAudit({
    requests: () => server.stats().requests,
    join: () => join.stats(),
    records: () => source.stats(),
  });
}

/** The admission webhook, and the thread where it reads large reviews (updated with the types watched). */
async function startAdmission(
  admission: NonNullable<WatchSettings['admission']>,
  settings: WatchSettings,
  digests: AdmissionDigests,
  wiring: Wiring,
): Promise<AdmissionThread> {
  const { endpointOf } = await import('../service/webhook-endpoint.ts');
  const { join, log } = wiring;
  const source = wiring.admissionSource as AdmissionSource;
  const [{ AdmissionServer }, { AdmissionThread }] = await Promise.all([
    import('../service/admission-server.ts'),
    import('../service/admission-thread.ts'),
  ]);
  // --admission-cert-secret: kubediff makes and renews the certificate; imported only then.
  const managed = admission.managedCertificate;
  if (managed && !wiring.client) {
    throw new UsageError(
      '--admission-cert-secret keeps the certificate in a Secret of the cluster kubediff runs in, which a fleet replica (--fleet) does not watch as such: give the fleet --admission-cert and --admission-key (cert-manager) instead.',
    );
  }
  const certificate =
    managed && wiring.client
      ? wiring.lifecycle.use(
          await (await import('../service/managed-certificate.ts')).ManagedCertificate.start({
            ...managed,
            client: wiring.client,
            log,
          }),
          (certificate) => certificate.close(),
        )
      : undefined;
  // What the watch's normalizer is made of (src/cli/watch.ts), so that both digest alike.
  const thread = wiring.lifecycle.use(
    new AdmissionThread(
      { ignoredPaths: settings.ignoredPaths, redactionKey: settings.redaction.key },
      { maxRequestBytes: admission.maxRequestBytes },
    ),
    (thread) => thread.close(),
  );
  const server = wiring.lifecycle.use(
    await AdmissionServer.start({
      ...endpointOf(admission),
      certificate,
      digest: (write) => digests.of(write),
      thread,
      onRecords: (records) => {
        join.offer(source, records);
        wiring.forward({ admission: records });
      },
      peerRoute: wiring.peerRoute,
      failures: wiring.failures,
      log,
    }),
    (server) => server.close(),
  );
  wiring.listeners.push(server.listener);
  wiring.service.observeListener(server.listener.guard);
  const registry = wiring.service.metricsRegistry;
  if (registry) {
    // With prom-client, only when the metrics are served.
    const { registerAdmissionMetrics } = await import('../service/who-metrics.ts');
    registerAdmissionMetrics(registry, {
      server,
      thread,
      join: () => join.stats(),
      records: () => source.stats(),
    });
  }
  return thread;
}

async function startPeers(address: string, wiring: Wiring): Promise<void> {
  const { PeerForwarder } = await import('../service/peer-forwarder.ts');
  const { parsePeerAddress } = await import('../service/peer-address.ts');
  const { port } = parsePeerAddress(address);
  const { listeners } = wiring;
  // The listener the peers' port names (the replicas of a Deployment share their ports), else the
  // admission webhook's: its certificate is the credential (peersFrom() checked there is one).
  const listener = (listeners.find((candidate) => candidate.port === port) ??
    listeners.at(-1)) as WebhookListener;
  const forwarder = wiring.lifecycle.use(
    new PeerForwarder({ address, listener, log: wiring.log }),
    (forwarder) => forwarder.close(),
  );
  await forwarder.start();
  wiring.forward = (records) => forwarder.forward(records);
  const registry = wiring.service.metricsRegistry;
  if (registry) {
    const { registerPeerMetrics } = await import('../service/who-metrics.ts');
    registerPeerMetrics(registry, { forwarder, listeners });
  }
  wiring.log.info(`sending the records of who made each change to the other replicas at ${address}`);
}

async function peerRouteFor(
  join: WhoJoin,
  auditSource: AuditSource | undefined,
  admissionSource: AdmissionSource | undefined,
): Promise<WebhookRoute> {
  const { PeerBodyError, readPeerRecords } = await import('../service/peer-records.ts');
  return {
    receive: (body) => {
      let records: ReturnType<typeof readPeerRecords>;
      try {
        records = readPeerRecords(body.toString('utf8'));
      } catch (error) {
        return {
          status: 400,
          body: '',
          why: error instanceof PeerBodyError ? error.message : 'the body cannot be read',
        };
      }
      return {
        status: 200,
        body: '{}',
        after: () => {
          // A source this replica does not run: its records name nothing here.
          if (auditSource && records.audit.length > 0) join.offer(auditSource, records.audit);
          if (admissionSource && records.admission.length > 0) join.offer(admissionSource, records.admission);
        },
      };
    },
  };
}
