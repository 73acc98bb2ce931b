// The one entry point of "who" (startWho): the audit webhook (--audit-listen, docs/audit.md) and the
// admission webhook (--admission-listen, docs/who.md) feed one join stage (who-join.ts); with --peers, what
// either receives is also posted to the other replicas, and what they post is joined here. Without a
// source there is no join stage, no wait and none of these modules loaded. What it opened, stop() closes.

import type { Registry } from 'prom-client';
import type { Normalizer } from '../diff/normalize.ts';
import type { KubeClient } from '../kube/client.ts';
import type { ResourceType } from '../kube/types.ts';
import { UsageError } from '../util/errors.ts';
import type { FailureReporter } from '../util/event-failures.ts';
import { Lifecycle } from '../util/lifecycle.ts';
import type { ListenerGuard } from '../util/listener-guard.ts';
import type { Logger } from '../util/log.ts';
import type { AdmissionDigests } from './admission/admission-digests.ts';
import type { AdmissionSource } from './admission/admission-match.ts';
import type { AdmissionThread } from './admission/admission-thread.ts';
import type { AuditSource } from './audit/audit-match.ts';
import type { AuditSource as ObservedAudit } from './audit/audit-metrics.ts';
import type { WebhookListener } from './listener/webhook-listener.ts';
import type { WebhookRoute } from './listener/webhook-route.ts';
import type { PeerRecords } from './peers/peer-records.ts';
import type { AdmissionSettings, AuditSettings, WhoSettings } from './settings.ts';
import type { WhoJoin } from './who-join.ts';
import type { WhoSource } from './who-source.ts';

/** What "who" is given by the watch it runs in. */
export interface WhoHost {
  /** The (first) cluster's client: a managed admission certificate lives there (none in a fleet). */
  client: KubeClient | undefined;
  /** The watch's: a review's object is digested as the watch stores that type. */
  normalizer: Normalizer;
  log: Logger;
  /** Where records that fail to join, and changes the join fails to pass on, are reported. */
  failures: FailureReporter<'handler'>;
}

/** "Who" running: what the watch and its service take from it. */
export interface WhoRuntime {
  /** The join stage, when a source of "who" is configured. */
  readonly stage: WhoJoin | undefined;
  /** The types the watch watches now, on every cluster: reviews of other resources name nothing. */
  watching(types: readonly ResourceType[]): void;
  /** Where its webhooks listen (host:port), in the order they started. */
  readonly addresses: readonly string[];
  readonly metrics: WhoMetrics;
  /** Closes what startWho opened (listeners, the admission thread, the forwarder, the certificate), in reverse. */
  stop(): Promise<void>;
}

/** What the service's metrics read of "who" (ServiceRuntime.observeWho). */
export interface WhoMetrics {
  /** The webhooks' listener guards: their closed connections (kubediff_listener_connections_closed_total). */
  readonly listeners: readonly ListenerGuard[];
  /** The audit webhook's counts, which the audit series read (zero without --audit-listen). */
  readonly audit: ObservedAudit | undefined;
  /** Registers the join's, the admission webhook's and the peers' series (prom-client loaded only then). */
  register(registry: Registry): Promise<void>;
}

/** What the parts below share: the join and its sources, where records also go, the listeners started. */
interface Wiring extends WhoHost {
  lifecycle: Lifecycle;
  /** Where each part's series are registered, in the order they started. */
  registrations: ((registry: Registry) => Promise<void>)[];
  audit: ObservedAudit | undefined;
  join: WhoJoin;
  auditSource: AuditSource | undefined;
  admissionSource: AdmissionSource | undefined;
  peerRoute: WebhookRoute | undefined;
  /** Records received from the API server, for the peers (set once they are known). */
  forward: (records: Partial<PeerRecords>) => void;
  listeners: WebhookListener[];
}

/** What a source's webhook does with the records it received: joins them here and forwards them to the peers. */
function receivedBy<K extends keyof PeerRecords>(
  wiring: Wiring,
  source: WhoSource<PeerRecords[K][number]>,
  key: K,
): (records: PeerRecords[K]) => void {
  return (records) => {
    wiring.join.offer(source, records);
    wiring.forward({ [key]: records } as Partial<PeerRecords>);
  };
}

/** Nothing to start: no join stage, no metrics of its own. */
const NO_WHO: WhoRuntime = {
  stage: undefined,
  watching: () => {},
  addresses: [],
  metrics: { listeners: [], audit: undefined, register: async () => {} },
  stop: async () => {},
};

/** Starts the configured sources of "who" and their join; on a failure, closes what it had opened. */
export async function startWho(settings: WhoSettings, host: WhoHost): Promise<WhoRuntime> {
  if (!settings.audit && !settings.admission) return NO_WHO;
  const lifecycle = new Lifecycle();
  try {
    return await startSources(settings, host, lifecycle);
  } catch (error) {
    await lifecycle.close();
    throw error;
  }
}

async function startSources(settings: WhoSettings, deps: WhoHost, lifecycle: Lifecycle): Promise<WhoRuntime> {
  const { audit, admission } = settings;
  const { log } = deps;
  // Imported only here: a watch without a source of "who" loads none of the join's modules.
  const [{ AdmissionDigests }, { AdmissionSource }, { AuditSource }, { WHO_JOIN_DEFAULTS, WhoJoin }] =
    await Promise.all([
      import('./admission/admission-digests.ts'),
      import('./admission/admission-match.ts'),
      import('./audit/audit-match.ts'),
      import('./who-join.ts'),
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
  const wiring: Wiring = {
    ...deps,
    lifecycle,
    // With prom-client, only when the metrics are served.
    registrations: [
      async (registry) => {
        const { registerWhoJoinMetrics } = await import('./who-metrics.ts');
        registerWhoJoinMetrics(registry, () => join.stats());
      },
    ],
    audit: undefined,
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
  const { registrations, listeners } = wiring;
  return {
    stage: join,
    addresses: listeners.map((listener) => listener.address),
    metrics: {
      listeners: listeners.map((listener) => listener.guard),
      audit: wiring.audit,
      register: async (registry) => {
        for (const register of registrations) await register(registry);
      },
    },
    stop: () => lifecycle.close(),
    watching: (types) => {
      digests.update(types);
      // Large reviews are digested in the admission thread, with the same rules.
      thread?.update(
        types.map((type) => ({ type, redactPaths: deps.normalizer.rulesFor(type).redact.patterns })),
      );
    },
  };
}

async function startAudit(audit: AuditSettings, wiring: Wiring): Promise<void> {
  const { endpointOf } = await import('./listener/webhook-endpoint.ts');
  const { join, log } = wiring;
  const source = wiring.auditSource as AuditSource;
  // Imported only here: its HTTPS server stays out of a watch without --audit-listen.
  const { AuditServer } = await import('./audit/audit-server.ts');
  const server = wiring.lifecycle.use(
    await AuditServer.start({
      ...endpointOf(audit),
      onRecords: receivedBy(wiring, source, 'audit'),
      peerRoute: wiring.peerRoute,
      failures: wiring.failures,
      log,
    }),
    (server) => server.close(),
  );
  wiring.listeners.push(server.listener);
  wiring.audit = {
    requests: () => server.stats().requests,
    join: () => join.stats(),
    records: () => source.stats(),
  };
}

/** The admission webhook, and the thread where it reads large reviews (updated with the types watched). */
async function startAdmission(
  admission: AdmissionSettings,
  settings: WhoSettings,
  digests: AdmissionDigests,
  wiring: Wiring,
): Promise<AdmissionThread> {
  const { endpointOf } = await import('./listener/webhook-endpoint.ts');
  const { join, log } = wiring;
  const source = wiring.admissionSource as AdmissionSource;
  const [{ AdmissionServer }, { AdmissionThread }] = await Promise.all([
    import('./admission/admission-server.ts'),
    import('./admission/admission-thread.ts'),
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
          await (await import('./certificate/managed-certificate.ts')).ManagedCertificate.start({
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
      onRecords: receivedBy(wiring, source, 'admission'),
      peerRoute: wiring.peerRoute,
      failures: wiring.failures,
      log,
    }),
    (server) => server.close(),
  );
  wiring.listeners.push(server.listener);
  wiring.registrations.push(async (registry) => {
    const { registerAdmissionMetrics } = await import('./who-metrics.ts');
    registerAdmissionMetrics(registry, {
      server,
      thread,
      join: () => join.stats(),
      records: () => source.stats(),
    });
  });
  return thread;
}

async function startPeers(address: string, wiring: Wiring): Promise<void> {
  const { PeerForwarder } = await import('./peers/peer-forwarder.ts');
  const { parsePeerAddress } = await import('./peers/peer-address.ts');
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
  wiring.registrations.push(async (registry) => {
    const { registerPeerMetrics } = await import('./who-metrics.ts');
    registerPeerMetrics(registry, { forwarder, listeners });
  });
  wiring.log.info(`sending the records of who made each change to the other replicas at ${address}`);
}

async function peerRouteFor(
  join: WhoJoin,
  auditSource: AuditSource | undefined,
  admissionSource: AdmissionSource | undefined,
): Promise<WebhookRoute> {
  const { PeerBodyError, readPeerRecords } = await import('./peers/peer-records.ts');
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
