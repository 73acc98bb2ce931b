// `watch --fleet`: one replica of a fleet that shares the clusters among its replicas, through the
// PostgreSQL state (docs/fleets.md). Read by src/config/fleet-settings.ts (RawFleetFlags).
import type { FlagGroup } from '../../util/flag-spec.ts';

export const FLEET: FlagGroup = {
  title: 'Fleet of replicas',
  flags: [
    {
      flags: '--fleet <name>',
      description: "share the clusters among this fleet's replicas",
      // In --help-all only: --help is a screen, and a fleet is set up once, in its manifests.
      more: true,
    },
    {
      flags: '--fleet-replica <name>',
      description: "this replica's name in the fleet (default: $POD_NAME, else the hostname)",
      more: true,
    },
    {
      flags: '--fleet-replica-timeout <duration>',
      description: 'a replica silent this long is gone and its clusters are taken over (default: 10s)',
      more: true,
    },
  ],
};
