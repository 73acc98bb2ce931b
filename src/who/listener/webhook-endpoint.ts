// Where a webhook listener (the audit webhook, the admission webhook) listens and who may post to it:
// what its configuration gives (endpoint-config.ts) and its server takes (webhook-listener.ts).
// A module of its own, with no server in it: the command wires the settings to a server it imports only
// when that webhook is configured.

export interface WebhookEndpoint {
  /** host:port or :port. */
  listen: string;
  /** The serving certificate and key (PEM files), unless kubediff manages them (--admission-cert-secret). */
  certFile?: string | undefined;
  keyFile?: string | undefined;
  /** Client certificates must be signed by this CA… */
  clientCAFile?: string | undefined;
  /** …and have one of these subject common names (globs). */
  clientNames?: readonly string[] | undefined;
  /** Requests must carry `Authorization: Bearer <token>`. */
  token?: string | undefined;
  /** A larger body is refused (413). */
  maxRequestBytes: number;
}

/** The endpoint of `settings`, without whatever else they hold. */
export function endpointOf(settings: WebhookEndpoint): WebhookEndpoint {
  const { listen, certFile, keyFile, clientCAFile, clientNames, token, maxRequestBytes } = settings;
  return { listen, certFile, keyFile, clientCAFile, clientNames, token, maxRequestBytes };
}
