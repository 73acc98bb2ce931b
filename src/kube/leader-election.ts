// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does: a candidate
// takes the Lease when it is free or unchanged for leaseDuration by its own clock; the leader renews every
// retryPeriod and stops leading when it could not for renewDeadline (before anyone may take over); every
// write is a PUT with the resourceVersion read (two cannot both win); a clean stop releases the Lease. The
// leader keeps small annotations of its own in the Lease (the handover checkpoint, leader-gate.ts).

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { sleep } from '../util/backoff.ts';
import type { Logger } from '../util/log.ts';
import { isoTimestamp } from '../util/timestamp.ts';
import type { KubeClient } from './client.ts';
import { KubeError } from './errors.ts';
import { SERVICE_ACCOUNT_DIR } from './kubeconfig.ts';

/** What leader election asks of the client: read, create and replace a Lease. */
export type LeaseClient = Pick<KubeClient, 'getJSON' | 'postJSON' | 'putJSON'>;

export interface LeaderElectionConfig {
  namespace: string;
  /** The Lease's name. */
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** client-go's defaults (LeaseDuration 15s, RenewDeadline 10s, RetryPeriod 2s). */
export const DEFAULT_LEASE_DURATION_MS = 15_000;
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
export const DEFAULT_RETRY_PERIOD_MS = 2_000;
/** client-go's JitterFactor: a candidate waits retryPeriod × [1, 1.2). */
const JITTER = 0.2;

export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  };
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
  };
}

export interface LeaderCallbacks {
  /** This replica now leads. `previous` is the Lease as it was before we took it (undefined if new). */
  onStartedLeading(previous: Lease | undefined): void;
  /** This replica no longer leads (renewal failed for renewDeadline, or stop()). */
  onStoppedLeading(reason: string): void;
  /** Each read of a Lease held by someone else (standby). */
  onObserved?(lease: Lease): void;
  /** Annotations the leader writes into the Lease on each renew (and on release). */
  annotations?(): Record<string, string>;
}

export class LeaderElector {
  private readonly client: LeaseClient;
  private readonly config: LeaderElectionConfig;
  private readonly callbacks: LeaderCallbacks;
  private readonly log: Logger;
  private readonly abort = new AbortController();
  private readonly path: string;
  private leading = false;
  /** The last record seen and when it changed, by our clock. */
  private observed: { key: string; at: number } | undefined;
  private lastHolder: string | undefined;
  private running: Promise<void> | undefined;
  private readonly random: () => number;

  constructor(
    client: LeaseClient,
    config: LeaderElectionConfig,
    callbacks: LeaderCallbacks,
    log: Logger,
    options: { random?: () => number } = {},
  ) {
    if (!(config.leaseDurationMs > config.renewDeadlineMs))
      throw new RangeError('the lease duration must be longer than the renew deadline');
    if (!(config.renewDeadlineMs > config.retryPeriodMs * (1 + JITTER)))
      throw new RangeError('the renew deadline must be longer than the retry period × 1.2');
    this.client = client;
    this.config = config;
    this.callbacks = callbacks;
    this.log = log;
    this.random = options.random ?? Math.random;
    this.path = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(config.namespace)}/leases`;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  get identity(): string {
    return this.config.identity;
  }

  /** Starts campaigning in the background. */
  start(): void {
    this.running ??= this.run();
  }

  /**
   * Stops; a leader releases the Lease first (so a standby takes over at once). So does a candidate whose
   * last write went unanswered (cut short by this stop, a timeout, the network): the API server may have
   * taken it, making this replica the holder without knowing; release() clears the Lease only if so.
   */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
    if (this.leading) {
      this.leading = false;
      await this.release();
      this.callbacks.onStoppedLeading('stopping');
    } else if (this.unansweredWrite) {
      await this.release();
    }
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private async run(): Promise<void> {
    const { namespace, name, identity } = this.config;
    this.log.info(`leader election: campaigning for lease ${namespace}/${name} as ${identity}`, {
      component: 'leader-election',
    });
    while (!this.stopped) {
      // Candidate: try until we lead.
      while (!this.stopped && !this.leading) {
        const previous = await this.attempt();
        if (previous !== false) {
          this.leading = true;
          this.log.info(`leader election: became the leader (lease ${namespace}/${name})`, {
            component: 'leader-election',
            identity,
          });
          this.callbacks.onStartedLeading(previous ?? undefined);
          break;
        }
        await sleep(this.config.retryPeriodMs * (1 + JITTER * this.random()), this.abort.signal);
      }
      // Leader: renew every retryPeriod; give up after renewDeadline without success.
      let renewedAt = Date.now();
      while (!this.stopped && this.leading) {
        await sleep(this.config.retryPeriodMs, this.abort.signal);
        if (this.stopped) break;
        // Bounded by the renew deadline (not by the start of this attempt), so that a leader cut off
        // from the API server stops leading before its Lease can expire for the others.
        const renewed = await this.attempt(renewedAt + this.config.renewDeadlineMs);
        if (this.stopped) break;
        if (renewed !== false) {
          renewedAt = Date.now();
          continue;
        }
        if (Date.now() - renewedAt >= this.config.renewDeadlineMs) {
          this.leading = false;
          const reason = `could not renew the lease for ${Math.round(this.config.renewDeadlineMs / 1000)}s`;
          this.log.warn(`leader election: lost the lease (${reason}); standing by.`, {
            component: 'leader-election',
          });
          this.callbacks.onStoppedLeading(reason);
        }
      }
    }
  }

  /**
   * One read and, when allowed, one write. Returns false when we do not hold the Lease afterwards;
   * otherwise the Lease as it was before our write (null when we created it).
   */
  private async attempt(deadline?: number): Promise<Lease | null | false> {
    const now = Date.now();
    const timeoutMs = Math.max(1, (deadline ?? now + this.config.renewDeadlineMs) - now);
    const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(timeoutMs)]);
    let lease: Lease;
    try {
      const response = await this.client.getJSON<Lease>(
        `${this.path}/${encodeURIComponent(this.config.name)}`,
        {
          signal,
        },
      );
      if (response.notModified) return false;
      lease = response.body;
    } catch (error) {
      if (error instanceof KubeError && error.kind === 'not-found') return this.create(signal);
      this.reportFailure('read', error);
      return false;
    }

    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const key = `${holder}\u0000${spec.renewTime ?? ''}\u0000${spec.leaseTransitions ?? 0}`;
    if (this.observed?.key !== key) this.observed = { key, at: now };
    if (holder !== this.lastHolder) {
      this.lastHolder = holder;
      if (holder && holder !== this.config.identity) {
        this.log.info(`leader election: ${holder} leads; standing by.`, { component: 'leader-election' });
      }
    }

    const ours = holder === this.config.identity;
    if (!ours && holder !== '' && this.observed.at + this.config.leaseDurationMs > now) {
      if (this.leading) {
        // Someone else took it (our renewals must have failed for too long): not ours any more.
        this.leading = false;
        this.log.warn(`leader election: ${holder} took over the lease; standing by.`, {
          component: 'leader-election',
        });
        this.callbacks.onStoppedLeading(`${holder} took over the lease`);
        return false;
      }
      this.callbacks.onObserved?.(lease);
      return false;
    }

    const stamp = microTime(now);
    const updated: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        ...lease.metadata,
        annotations: {
          ...lease.metadata.annotations,
          ...(this.leading ? this.callbacks.annotations?.() : {}),
        },
      },
      spec: {
        holderIdentity: this.config.identity,
        leaseDurationSeconds: Math.ceil(this.config.leaseDurationMs / 1000),
        acquireTime: ours && spec.acquireTime ? spec.acquireTime : stamp,
        renewTime: stamp,
        leaseTransitions: (spec.leaseTransitions ?? 0) + (ours ? 0 : 1),
      },
    };
    const written = await this.write('update', () =>
      this.client.putJSON<Lease>(`${this.path}/${encodeURIComponent(this.config.name)}`, updated, { signal }),
    );
    if (!written) return false;
    this.observed = {
      key: `${this.config.identity}\u0000${written.spec?.renewTime ?? stamp}\u0000${written.spec?.leaseTransitions ?? 0}`,
      at: now,
    };
    return lease;
  }

  private async create(signal: AbortSignal): Promise<Lease | null | false> {
    const stamp = microTime(Date.now());
    const lease: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.config.name,
        namespace: this.config.namespace,
        labels: { 'app.kubernetes.io/name': 'kubediff' },
      },
      spec: {
        holderIdentity: this.config.identity,
        leaseDurationSeconds: Math.ceil(this.config.leaseDurationMs / 1000),
        acquireTime: stamp,
        renewTime: stamp,
        leaseTransitions: 0,
      },
    };
    const created = await this.write('create', () =>
      this.client.postJSON<Lease>(this.path, lease, { signal }),
    );
    return created ? null : false;
  }

  /**
   * One write of the Lease; the Lease as written, or undefined when it failed. A conflict (409: another
   * replica wrote it first) is the normal way to lose a race, and not reported.
   */
  private async write(what: 'create' | 'update', send: () => Promise<Lease>): Promise<Lease | undefined> {
    try {
      const written = await send();
      this.unansweredWrite = false;
      this.lastHolder = this.config.identity;
      this.warned = undefined;
      return written;
    } catch (error) {
      // Without the server's answer (no status), whether the write landed is unknown.
      this.unansweredWrite = !(error instanceof KubeError && error.status !== undefined);
      if (!(error instanceof KubeError && error.status === 409)) this.reportFailure(what, error);
      return undefined;
    }
  }

  /** Gives the Lease up (empty holder), leaving the annotations of our last checkpoint in it. */
  private async release(): Promise<void> {
    const path = `${this.path}/${encodeURIComponent(this.config.name)}`;
    try {
      const response = await this.client.getJSON<Lease>(path, { signal: AbortSignal.timeout(5_000) });
      if (response.notModified) return;
      const lease = response.body;
      if (lease.spec?.holderIdentity !== this.config.identity) return;
      const stamp = microTime(Date.now());
      await this.client.putJSON<Lease>(
        path,
        {
          ...lease,
          metadata: {
            ...lease.metadata,
            annotations: { ...lease.metadata.annotations, ...this.callbacks.annotations?.() },
          },
          spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: stamp },
        },
        { signal: AbortSignal.timeout(5_000) },
      );
      this.log.info('leader election: released the lease.', { component: 'leader-election' });
    } catch (error) {
      this.reportFailure('release', error);
    }
  }

  /** The failure last warned about: a run of the same failure is one warning, the rest --debug. */
  private warned: string | undefined;
  /** The last write of the Lease got no answer: it may have landed (stop() then releases). */
  private unansweredWrite = false;

  private reportFailure(what: string, error: unknown): void {
    if (this.stopped) return;
    const message = error instanceof Error ? error.message : String(error);
    const line = `leader election: cannot ${what} lease ${this.config.namespace}/${this.config.name}: ${message}`;
    if (this.warned === line) {
      this.log.debug(line, { component: 'leader-election' });
      return;
    }
    this.warned = line;
    this.log.warn(`${line}; retrying every ${Math.round(this.config.retryPeriodMs / 100) / 10}s.`, {
      component: 'leader-election',
    });
  }
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
export function microTime(ms: number): string {
  return isoTimestamp(ms).replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** The namespace of the Lease when not given: the pod's own ($POD_NAMESPACE or the mounted file), else default. */
export function defaultLeaseNamespace(env: NodeJS.ProcessEnv = process.env): string {
  if (env.POD_NAMESPACE) return env.POD_NAMESPACE;
  try {
    const text = readFileSync(`${SERVICE_ACCOUNT_DIR}/namespace`, 'utf8').trim();
    if (text) return text;
  } catch {
    // Not in a pod.
  }
  return 'default';
}

/**
 * The pod name of a Deployment's replica: `<deployment>-<pod-template-hash>-<5 random>`, both suffixes in
 * the alphabet Kubernetes uses for generated names (no vowels, no 0, 1, 3).
 */
const DEPLOYMENT_POD =
  /^([a-z0-9][-a-z0-9.]*)-[bcdfghjklmnpqrstvwxz2456789]{1,10}-[bcdfghjklmnpqrstvwxz2456789]{5}$/;

/**
 * The Lease's name when not given: the name of the Deployment whose replica this pod is ($POD_NAME
 * without its two generated suffixes), so that two installs in one namespace never share a Lease (nor
 * a checkpoint); `kubediff` when that cannot be told (not in a pod, a StatefulSet's or a bare pod).
 */
export function defaultLeaseName(env: NodeJS.ProcessEnv = process.env): string {
  return DEPLOYMENT_POD.exec(env.POD_NAME ?? '')?.[1] ?? 'kubediff';
}

/** Who we are in the Lease: the pod's name ($POD_NAME, else the hostname, which is the pod's name in a pod), plus the pid. */
export function defaultIdentity(env: NodeJS.ProcessEnv = process.env): string {
  const host = env.POD_NAME || hostname() || randomUUID();
  return `${host}_${process.pid}`;
}
