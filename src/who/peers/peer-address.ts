// `--peers <host:port>` (docs/who.md, "Two replicas"): where the other replicas of a leader-elected pair
// receive the records this one forwards (src/who/peers/peer-forwarder.ts).
import { UsageError } from '../../util/errors.ts';

/** `kubediff-peers.kubediff.svc:9443`, `10.0.0.7:9443`, `[fd00::7]:9443`: a host and a port, both needed. */
export function parsePeerAddress(text: string, flag = '--peers'): { host: string; port: number } {
  const value = text.trim();
  const match = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (!match || !(port > 0 && port <= 65_535)) {
    throw new UsageError(
      `invalid ${flag} "${text}": use host:port, e.g. kubediff-peers.kubediff.svc:9443 (a headless Service of the replicas) and the port of their --admission-listen or --audit-listen.`,
    );
  }
  return { host: (match[1] as string).replace(/^\[(.*)\]$/, '$1'), port };
}
