// Who can reach the UI: this machine only (a loopback address), or others too. Serving others without
// a token hands the change history to anyone who reaches the port, so it is refused unless the user
// says it is intended (docs/ui.md, "Safety"); checked before anything else starts.

import { UsageError } from '../util/errors.ts';
import { parseListenAddress } from '../util/http-server.ts';

/** How the UI is protected, and the names the refusal gives the user. */
export interface Exposure {
  /** Required as `Authorization: Bearer <token>` on /api/ when set. */
  token?: string | undefined;
  /** Serve other machines without a token: the exposure is intended. */
  allowNoToken?: boolean | undefined;
  /** The flag of the address, named in messages: --listen (ui) or --ui (watch). */
  flag?: string;
  /** The flags named in the refusal (--token-file / --ui-token-file, --allow-no-token / --ui-allow-no-token). */
  tokenFlag?: string;
  allowNoTokenFlag?: string;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

export function isLoopback(host: string | undefined): boolean {
  return host !== undefined && (LOOPBACK_HOSTS.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host));
}

/** True when `address` serves this machine only; a UsageError when it would serve others unprotected. */
export function checkExposure(address: string, exposure: Exposure): boolean {
  const flag = exposure.flag ?? '--listen';
  const loopbackOnly = isLoopback(parseListenAddress(address, flag).host);
  if (!loopbackOnly && !exposure.token && !exposure.allowNoToken) {
    throw new UsageError(
      `the UI on ${address} (${flag}) would be reachable from other machines without a token, so anyone who reaches the port could read the change history: pass ${exposure.tokenFlag ?? '--token-file'} <file>, listen on 127.0.0.1 (and use kubectl port-forward), or pass ${exposure.allowNoTokenFlag ?? '--allow-no-token'} if that exposure is intended.`,
    );
  }
  return loopbackOnly;
}
