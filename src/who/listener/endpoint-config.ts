// What the audit and the admission webhook's configuration share (docs/audit.md, docs/who.md): the keys
// of their config blocks that say where each listens, with which certificate, and who may post; and the
// endpoint from its flags over its block, key by key: its client CA, and its bearer token from the block's
// `token` (with ${VAR}) or $KUBEDIFF_<NAME>_TOKEN, never from a flag (a flag shows in `ps`). What each
// checks beyond that (who may post, its bounds) is its own (audit/config.ts, admission/config.ts).

import { stringList } from '../../sinks/core/entry-schema.ts';
import { UsageError } from '../../util/errors.ts';
import { checkedValue, LISTEN_ADDRESS_FORMAT } from '../../util/value-format.ts';
import type { WebhookEndpoint } from './webhook-endpoint.ts';

/** The keys of a webhook's config block that say where it listens and who may post to it. */
export const webhookEndpointKeys = {
  listen: { type: 'string', format: 'listen-address' },
  certFile: { type: 'string' },
  keyFile: { type: 'string' },
  clientCAFile: { type: 'string' },
  clientNames: stringList,
  token: { type: 'string' },
} as const;

/** The keys of a webhook's config block that the endpoint reads. */
interface EndpointBlock {
  listen?: string | undefined;
  certFile?: string | undefined;
  keyFile?: string | undefined;
  clientCAFile?: string | undefined;
  token?: string | undefined;
}

export interface EndpointSources {
  /** --<name>-listen, --<name>-cert, --<name>-key, --<name>-client-ca. */
  flags: {
    listen?: string | undefined;
    cert?: string | undefined;
    key?: string | undefined;
    clientCa?: string | undefined;
  };
  /** Flags that apply only to a listening webhook, as [flag, value]: given without a listener, an error. */
  listenerFlags: readonly (readonly [string, unknown])[];
  file: EndpointBlock | undefined;
  /** $KUBEDIFF_<NAME>_TOKEN. */
  envToken: string | undefined;
  /** Said when the certificate is missing: why HTTPS only (' (the API server calls no other)'), if more is known. */
  httpsOnlyNote?: string;
  /** The flag or key of a certificate kubediff manages, when one is given: then no files (one or the other). */
  managedCertificate?: string | undefined;
}

/** The endpoint of the `name` webhook ('audit', 'admission'), or undefined when it does not listen. */
export function webhookEndpointFrom(
  name: string,
  sources: EndpointSources,
): Pick<WebhookEndpoint, 'listen' | 'certFile' | 'keyFile' | 'clientCAFile' | 'token'> | undefined {
  const { flags, file } = sources;
  const listen = flags.listen?.trim() || file?.listen;
  if (!listen) {
    const given = sources.listenerFlags.find(([, value]) => value !== undefined);
    if (given)
      throw new UsageError(`${given[0]} applies to the ${name} webhook: add --${name}-listen <addr>.`);
    return undefined;
  }
  checkedValue(`--${name}-listen`, LISTEN_ADDRESS_FORMAT, listen);
  const certFile = flags.cert ?? file?.certFile;
  const keyFile = flags.key ?? file?.keyFile;
  const managed = sources.managedCertificate;
  if (managed && (certFile || keyFile)) {
    throw new UsageError(
      `${managed} makes the ${name} webhook's certificate, and --${name}-cert/--${name}-key (or ${name}.certFile/${name}.keyFile) give one: keep one or the other.`,
    );
  }
  if (!managed && (!certFile || !keyFile)) {
    throw new UsageError(
      `the ${name} webhook serves HTTPS only${sources.httpsOnlyNote ?? ''}: give its certificate and key with --${name}-cert and --${name}-key (or ${name}.certFile and ${name}.keyFile)${name === 'admission' ? ', or let kubediff manage one with --admission-cert-secret' : ''}.`,
    );
  }
  const clientCAFile = flags.clientCa ?? file?.clientCAFile;
  const token = file?.token ?? sources.envToken;
  return {
    listen,
    ...(certFile ? { certFile } : {}),
    ...(keyFile ? { keyFile } : {}),
    ...(clientCAFile ? { clientCAFile } : {}),
    ...(token ? { token } : {}),
  };
}
