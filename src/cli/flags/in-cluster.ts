// Running as a Deployment: health and metrics, leader election among replicas, the log format
// (docs/deploy.md). Read by src/config/service-settings.ts (RawServiceFlags).
import type { FlagGroup } from '../../util/flag-spec.ts';

export const IN_CLUSTER: FlagGroup = {
  title: 'Running in a cluster',
  flags: [
    { flags: '--listen <addr>', description: 'serve health checks and /metrics here: :8080' },
    {
      flags: '--ready-failure-threshold <duration>',
      description: 'a watch failing this long counts for /readyz (default: 60s)',
      more: true,
    },
    { flags: '--leader-elect', description: 'one of several replicas: the Lease holder delivers' },
    {
      flags: '--leader-election-namespace <ns>',
      description: "namespace of the Lease (default: the pod's, else default)",
      more: true,
    },
    {
      flags: '--leader-election-id <name>',
      description: "the Lease's name (default: the pod's Deployment, else kubediff)",
      more: true,
    },
    {
      flags: '--leader-election-identity <id>',
      description: 'this replica in the Lease (default: $POD_NAME or the hostname, and the pid)',
      more: true,
    },
    {
      flags: '--leader-election-lease-duration <duration>',
      description: 'how long a Lease is valid (default: 15s)',
      more: true,
    },
    {
      flags: '--leader-election-renew-deadline <duration>',
      description: 'the leader gives up after failing to renew this long (default: 10s)',
      more: true,
    },
    {
      flags: '--leader-election-retry-period <duration>',
      description: 'how often to try to acquire or renew (default: 2s)',
      more: true,
    },
    { flags: '--log-format <format>', description: 'text, json or auto (json unless on a terminal)' },
  ],
};
