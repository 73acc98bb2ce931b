// The CheckpointCheck of a running watch (src/events/handover/leader-gate.ts): what this replica's own informers
// of a resource have seen, and what the API server says that resource's list is at now.
import type { Informer } from '../../informer/informer.ts';
import type { KubeClient } from '../../kube/client.ts';
import { collectionPath, qualifiedName } from '../../kube/types.ts';
import type { CheckpointCheck } from './leader-gate.ts';

/** How long the one LIST of a check may take: a takeover waits for it. */
const CHECK_TIMEOUT_MS = 10_000;

function resourceVersionOf(text: string | undefined): bigint | undefined {
  return text !== undefined && /^\d{1,30}$/.test(text) ? BigInt(text) : undefined;
}

export function checkpointCheck(
  client: Pick<KubeClient, 'getJSON'>,
  informers: () => readonly Informer[],
): CheckpointCheck {
  const of = (resource: string) =>
    informers().filter((informer) => qualifiedName(informer.type) === resource);
  return {
    seen(resource) {
      let highest: bigint | undefined;
      for (const informer of of(resource)) {
        const rv = resourceVersionOf(informer.resourceVersion);
        if (rv !== undefined && (highest === undefined || rv > highest)) highest = rv;
      }
      return highest;
    },
    async current(resource) {
      // Watched with -n: in one of its namespaces, where this replica may list.
      const informer = of(resource)[0];
      if (!informer) return undefined;
      const response = await client.getJSON<{ metadata?: { resourceVersion?: string } }>(
        collectionPath(informer.type, informer.namespace),
        { query: { limit: 1 }, signal: AbortSignal.timeout(CHECK_TIMEOUT_MS) },
      );
      return response.notModified ? undefined : resourceVersionOf(response.body.metadata?.resourceVersion);
    },
  };
}
