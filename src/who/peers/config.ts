// What the peers are configured by (docs/who.md): the other replicas, which get every record of "who"
// this one receives; the config file's `peers:` or --peers, checked as a host:port, and only beside a
// webhook listener (its certificate is what the replicas trust each other by).

import { UsageError } from '../../util/errors.ts';
import type { FlagSpec } from '../../util/flag-spec.ts';
import { checkedValue, type ValueFormat } from '../../util/value-format.ts';
import { peerAddressProblem } from './peer-address.ts';

/** A peer's host:port. */
export const PEER_ADDRESS_FORMAT: ValueFormat = {
  name: 'peer-address',
  problem: peerAddressProblem,
  inFile: (_problem, { shown }) =>
    `expected host:port such as kubediff-peers.kubediff.svc:9443, got ${shown}`,
};

/** The config file's `peers:`. */
export const peersSchema = { type: 'string', format: 'peer-address' } as const;

export const PEER_FLAGS: readonly FlagSpec[] = [
  {
    flags: '--peers <host:port>',
    description: "the other replicas' webhook address: each gets the records this one receives",
    more: true,
  },
];

/** The values of PEER_FLAGS as commander hands them over. */
export interface RawPeerFlags {
  peers?: string;
}

/** --peers, or the file's `peers:`; it needs a listener (whose certificate the replicas share). */
export function peersFrom(
  flags: RawPeerFlags,
  file: string | undefined,
  listeners: readonly (string | undefined)[],
): string | undefined {
  const address = flags.peers?.trim() || file;
  if (!address) return undefined;
  checkedValue(flags.peers ? '--peers' : 'peers', PEER_ADDRESS_FORMAT, address);
  if (!listeners.some(Boolean)) {
    throw new UsageError(
      `--peers ${address}: the replicas post each other the records of --admission-listen or --audit-listen, with its certificate; add one of them.`,
    );
  }
  return address;
}
