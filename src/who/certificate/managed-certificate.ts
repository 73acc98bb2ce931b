// `--admission-cert-secret`: the admission webhook's certificate, managed by kubediff (docs/who.md, "The
// certificate"): a CA of its own and the serving certificate it signed (self-signed-ca.ts) in the install's
// Secret (rendered empty), renewed as certificate-plan.ts decides, served, and its CAs put into the caBundle
// of its own ValidatingWebhookConfiguration. Every replica reads the Secret every `checkIntervalMs`; writes
// carry the resourceVersion read (a 409 reads again and serves the winner's), the webhook patch tests its
// own. Needs get/update of this Secret and get/patch of this webhook configuration, by name (docs/deploy.md,
// "Least privilege"). At start a Secret that cannot be read for good is a UsageError; later failures are
// logged once per episode and retried, and what is served stays as it was.
import type { JsonPatchOperation, KubeClient } from '../../kube/client.ts';
import { KubeError } from '../../kube/errors.ts';
import { Backoff, sleep } from '../../util/backoff.ts';
import { formatDuration } from '../../util/duration.ts';
import { errorMessage, UsageError } from '../../util/errors.ts';
import type { Logger } from '../../util/log.ts';
import {
  applyStep,
  BACKDATE_MS,
  type CertificateData,
  type CertificatePolicy,
  type CertificateStep,
  certificatesOf,
  planCertificate,
} from './certificate-plan.ts';

export interface ManagedCertificateOptions {
  client: Pick<KubeClient, 'getJSON' | 'putJSON' | 'patchJSON'>;
  /** kubediff's namespace: the Secret's and the Service's. */
  namespace: string;
  secret: string;
  /** The Service the API server calls: the certificate is for `<service>.<namespace>.svc` (and `.cluster.local`). */
  service: string;
  /** The ValidatingWebhookConfiguration whose caBundle kubediff sets. */
  webhookConfiguration: string;
  /** How often the Secret is read; a new CA is trusted for twice this before it is served. */
  checkIntervalMs?: number;
  /** How long a certificate kubediff makes is valid; it is renewed when a third of that is left. */
  validityMs?: number;
  log: Logger;
  now?: () => number;
}

export interface ServedCertificate {
  cert: Buffer;
  key: Buffer;
}

export const MANAGED_CERTIFICATE_DEFAULTS = {
  checkIntervalMs: 60_000,
  validityMs: 365 * 24 * 3600_000,
} as const;

/** Writes lost to another replica's, in a row, before a check gives up until the next one. */
const MAX_CONFLICTS = 5;

interface SecretObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string } & Record<string, unknown>;
  type?: string;
  data?: Record<string, string>;
}

interface WebhookConfiguration {
  metadata: { resourceVersion?: string };
  webhooks?: {
    name: string;
    clientConfig?: { caBundle?: string; service?: { name?: string; namespace?: string } };
  }[];
}

const KEYS = ['tls.crt', 'tls.key', 'ca.crt', 'next.crt', 'next.key'] as const;

export class ManagedCertificate {
  private readonly options: ManagedCertificateOptions;
  private readonly policy: CertificatePolicy;
  private readonly checkIntervalMs: number;
  private readonly now: () => number;
  private readonly listeners: ((served: ServedCertificate) => void)[] = [];
  private readonly abort = new AbortController();
  private readonly retry = new Backoff({ initialMs: 1_000, maxMs: 30_000 });
  private served: ServedCertificate;
  private nextCert: Buffer | undefined;
  /** The caBundle the webhook has, as far as this replica knows (base64). */
  private patchedBundle: string | undefined;
  /** Problems logged in this episode, by kind, so that each is logged once until things work again. */
  private readonly logged = new Set<'secret' | 'webhook'>();
  private loop: Promise<void> = Promise.resolve();

  private constructor(
    options: ManagedCertificateOptions,
    policy: CertificatePolicy,
    served: ServedCertificate,
  ) {
    this.options = options;
    this.policy = policy;
    this.checkIntervalMs = options.checkIntervalMs ?? MANAGED_CERTIFICATE_DEFAULTS.checkIntervalMs;
    this.now = options.now ?? Date.now;
    this.served = served;
  }

  /**
   * Reads the Secret (filling or renewing it when the plan says so) until there is a certificate to serve,
   * retrying what may pass (the API server unreachable, a conflict); a Secret that is missing or may not
   * be read or written is a UsageError. Then keeps it, and the webhook's caBundle, up to date.
   */
  static async start(options: ManagedCertificateOptions): Promise<ManagedCertificate> {
    const checkIntervalMs = options.checkIntervalMs ?? MANAGED_CERTIFICATE_DEFAULTS.checkIntervalMs;
    const validityMs = options.validityMs ?? MANAGED_CERTIFICATE_DEFAULTS.validityMs;
    const { namespace, service } = options;
    const policy: CertificatePolicy = {
      dnsNames: [`${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`],
      validityMs,
      renewBeforeMs: validityMs / 3,
      overlapMs: 2 * checkIntervalMs,
    };
    const starting = new ManagedCertificate(options, policy, { cert: Buffer.alloc(0), key: Buffer.alloc(0) });
    const backoff = new Backoff({ initialMs: 500, maxMs: 10_000 });
    for (;;) {
      try {
        starting.take(await starting.reconcileSecret());
        break;
      } catch (error) {
        if (error instanceof KubeError && ['forbidden', 'not-found', 'unauthorized'].includes(error.kind))
          throw new UsageError(starting.secretProblem(error));
        starting.logOnce('secret', `${starting.secretProblem(error)}; retrying.`);
        await sleep(backoff.next());
      }
    }
    starting.logged.clear();
    starting.schedule(0);
    return starting;
  }

  /** The certificate and key to serve now. */
  get current(): ServedCertificate {
    return this.served;
  }

  /** The certificate every replica serves next, while a rotation is under way (the peers accept it). */
  get next(): Buffer | undefined {
    return this.nextCert;
  }

  /** Told each time the certificate to serve changes. */
  onChange(listener: (served: ServedCertificate) => void): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  /** The next check in `delayMs`: one at a time, until close(). */
  private schedule(delayMs: number): void {
    this.loop = this.loop.then(async () => {
      await sleep(delayMs, this.abort.signal);
      if (this.abort.signal.aborted) return;
      this.schedule(await this.check());
    });
  }

  /** One check of the Secret and the webhook; the delay until the next. */
  private async check(): Promise<number> {
    let data: CertificateData;
    try {
      data = await this.reconcileSecret();
      this.recovered('secret');
    } catch (error) {
      this.logOnce('secret', `${this.secretProblem(error)}; still serving the certificate it has, retrying.`);
      return Math.min(this.checkIntervalMs, this.retry.next());
    }
    this.take(data);
    const inSync = await this.reconcileWebhook(data['ca.crt'] ?? '');
    if (!inSync) return Math.min(this.checkIntervalMs, this.retry.next());
    this.retry.reset();
    return this.checkIntervalMs;
  }

  /** Serves what the Secret holds, telling the listeners when it changed; keeps its next certificate. */
  private take(data: CertificateData): void {
    const upcoming = data['next.crt'];
    if (!upcoming) this.nextCert = undefined;
    else if (!this.nextCert?.equals(Buffer.from(upcoming))) this.nextCert = Buffer.from(upcoming);
    const served = servedOf(data);
    if (served.cert.equals(this.served.cert) && served.key.equals(this.served.key)) return;
    this.served = served;
    for (const listener of this.listeners) listener(served);
  }

  /** Reads the Secret, writes what the plan says (again after a conflict), and returns what it holds. */
  private async reconcileSecret(): Promise<CertificateData> {
    const { client, namespace, secret } = this.options;
    const path = `/api/v1/namespaces/${namespace}/secrets/${secret}`;
    for (let conflicts = 0; ; conflicts++) {
      const read = await client.getJSON<SecretObject>(path);
      const object = read.notModified ? undefined : read.body;
      if (!object) throw new Error(`no answer for ${path}`);
      const data = decode(object.data);
      const now = this.now();
      const step = planCertificate(data, now, this.policy);
      if (step.kind === 'serve') return data;
      const written = applyStep(data, step, now, await this.madeFor(step, now));
      try {
        await client.putJSON(path, { ...object, data: encode(written) });
      } catch (error) {
        // Another replica wrote first: read what it wrote, and plan again.
        if (error instanceof KubeError && error.status === 409 && conflicts < MAX_CONFLICTS) continue;
        throw error;
      }
      this.options.log.info(this.describe(step, written));
      return written;
    }
  }

  private madeFor(step: Exclude<CertificateStep, { kind: 'serve' }>, now: number) {
    if (step.kind !== 'issue' && step.kind !== 'prepare') return Promise.resolve(undefined);
    return import('./self-signed-ca.ts').then(({ makeCertificateSet }) =>
      makeCertificateSet({
        dnsNames: this.policy.dnsNames,
        caName: `${this.options.service}.${this.options.namespace} admission CA`,
        notBefore: new Date(now - BACKDATE_MS),
        notAfter: new Date(now + this.policy.validityMs),
      }),
    );
  }

  /**
   * Sets the caBundle of the webhooks of the configuration that call the Service, when it differs from
   * the Secret's `ca.crt`; true when they have it (or nothing could be done but wait for the next check).
   */
  private async reconcileWebhook(caPem: string): Promise<boolean> {
    const { client, namespace, service, webhookConfiguration } = this.options;
    const bundle = Buffer.from(caPem).toString('base64');
    if (bundle === this.patchedBundle) return true;
    const path = `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${webhookConfiguration}`;
    const name = `the ValidatingWebhookConfiguration ${webhookConfiguration}`;
    try {
      const read = await client.getJSON<WebhookConfiguration>(path);
      const configuration = read.notModified ? undefined : read.body;
      const ours = (configuration?.webhooks ?? []).flatMap((webhook, index) =>
        webhook.clientConfig?.service?.name === service &&
        webhook.clientConfig.service.namespace === namespace
          ? [{ webhook, index }]
          : [],
      );
      if (ours.length === 0) {
        this.logOnce(
          'webhook',
          `admission webhook: ${name} has no webhook that calls the Service ${namespace}/${service}: its caBundle is not set (check --admission-service and --admission-webhook-config).`,
        );
        return false;
      }
      const stale = ours.filter(({ webhook }) => webhook.clientConfig?.caBundle !== bundle);
      if (stale.length > 0) {
        const patch: JsonPatchOperation[] = [
          { op: 'test', path: '/metadata/resourceVersion', value: configuration?.metadata.resourceVersion },
          ...stale.map(({ index }) => ({
            op: 'add' as const,
            path: `/webhooks/${index}/clientConfig/caBundle`,
            value: bundle,
          })),
        ];
        await client.patchJSON(path, patch);
        this.options.log.info(
          `admission webhook: set the caBundle of ${name} to the CAs of the Secret ${namespace}/${this.options.secret}.`,
        );
      }
      this.patchedBundle = bundle;
      this.recovered('webhook');
      return true;
    } catch (error) {
      const why =
        error instanceof KubeError && error.kind === 'not-found'
          ? `${name} does not exist (yet): its caBundle is set once it does`
          : `cannot set the caBundle of ${name}: ${errorMessage(error)}`;
      this.logOnce('webhook', `admission webhook: ${why}; retrying.`);
      return false;
    }
  }

  private describe(step: Exclude<CertificateStep, { kind: 'serve' }>, written: CertificateData): string {
    const where = `the Secret ${this.options.namespace}/${this.options.secret}`;
    const names = this.policy.dnsNames.join(', ');
    const overlap = formatDuration(this.policy.overlapMs);
    switch (step.kind) {
      case 'issue':
        return `admission webhook: ${where} ${step.why}: made a CA and a serving certificate for ${names}, valid for ${formatDuration(this.policy.validityMs)}.`;
      case 'prepare':
        return `admission webhook: ${where}: ${step.why}: made the next CA and certificate; the new CA is trusted now and its certificate served in ${overlap}.`;
      case 'promote':
        return `admission webhook: serving the next certificate of ${where} (its CA has been trusted for ${overlap}).`;
      case 'trim':
        return `admission webhook: ${where}: the previous CA is no longer trusted (${certificatesOf(written['ca.crt']).length} left).`;
    }
  }

  private secretProblem(error: unknown): string {
    const where = `the Secret ${this.options.namespace}/${this.options.secret} of --admission-cert-secret`;
    if (error instanceof KubeError) {
      if (error.kind === 'not-found')
        return `${where} does not exist: it is part of the install (the chart, deploy/components/admission), empty; apply it and kubediff fills it`;
      if (error.kind === 'forbidden' || error.kind === 'unauthorized')
        return `kubediff may not read or update ${where} (${error.message}): its Role must grant get and update of it (docs/deploy.md, "Least privilege")`;
    }
    return `cannot read or update ${where}: ${errorMessage(error)}`;
  }

  private logOnce(kind: 'secret' | 'webhook', message: string): void {
    if (this.logged.has(kind)) return;
    this.logged.add(kind);
    this.options.log.warn(message);
  }

  private recovered(kind: 'secret' | 'webhook'): void {
    if (!this.logged.delete(kind)) return;
    const what =
      kind === 'secret'
        ? `the Secret ${this.options.namespace}/${this.options.secret} is read again`
        : `the caBundle of the ValidatingWebhookConfiguration ${this.options.webhookConfiguration} is set`;
    this.options.log.info(`admission webhook: ${what}.`);
  }
}

function decode(data: Record<string, string> | undefined): CertificateData {
  const decoded: CertificateData = {};
  for (const key of KEYS) {
    const value = data?.[key];
    if (value) decoded[key] = Buffer.from(value, 'base64').toString('utf8');
  }
  return decoded;
}

function encode(data: CertificateData): Record<string, string> {
  const encoded: Record<string, string> = {};
  for (const key of KEYS) {
    const value = data[key];
    if (value) encoded[key] = Buffer.from(value).toString('base64');
  }
  return encoded;
}

function servedOf(data: CertificateData): ServedCertificate {
  return { cert: Buffer.from(data['tls.crt'] ?? ''), key: Buffer.from(data['tls.key'] ?? '') };
}
