// `--peers <host:port>` (docs/who.md, "Two replicas"): where the other replicas of a leader-elected pair
// receive the records this one forwards (src/who/peers/peer-forwarder.ts).
import { UsageError } from '../../util/errors.ts';

const PEER_ADDRESS_PROBLEM =
  'use host:port, e.g. kubediff-peers.kubediff.svc:9443 (a headless Service of the replicas) and the port of their --admission-listen or --audit-listen';

/** `kubediff-peers.kubediff.svc:9443`, `10.0.0.7:9443`, `[fd00::7]:9443`: a host and a port, both needed. */
function peerAddressOf(text: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(text.trim());
  const port = Number(match?.[2]);
  if (!match || !(port > 0 && port <= 65_535)) return undefined;
  return { host: (match[1] as string).replace(/^\[(.*)\]$/, '$1'), port };
}

/** Why `text` is not a peer address, a phrase; undefined when it is one. */
export function peerAddressProblem(text: string): string | undefined {
  return peerAddressOf(text) ? undefined : PEER_ADDRESS_PROBLEM;
}

/** A peer address given by `flag`; a UsageError naming it otherwise. */
export function parsePeerAddress(text: string, flag = '--peers'): { host: string; port: number } {
  const address = peerAddressOf(text);
  if (!address) throw new UsageError(`invalid ${flag} "${text}": ${PEER_ADDRESS_PROBLEM}.`);
  return address;
}
