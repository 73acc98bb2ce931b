// What the audit and the admission webhook's settings share (docs/audit.md, docs/who.md): where each
// listens and with which certificate, from its flags over its config block, key by key; its client CA;
// and its bearer token, from the block's `token` (with ${VAR}) or $KUBEDIFF_<NAME>_TOKEN, never from a
// flag (a flag shows in `ps`). What each checks beyond that (who may post, its bounds) is its own.

import { UsageError } from '../util/errors.ts';
import type { WebhookEndpoint } from '../who/listener/webhook-endpoint.ts';
import { checkedFlagValue } from './flag-values.ts';

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
  checkedFlagValue(`--${name}-listen`, [name, 'listen'], listen);
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
