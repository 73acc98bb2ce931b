// Which clusters and which of their objects: `watch` and `resources` take the same flags, so that
// `kubediff resources` with a watch's flags lists what that watch watches. kubectl's names and short
// forms. Read by src/config/settings.ts and cluster-settings.ts (RawWatchFlags).
import type { FlagGroup } from '../../util/flag-spec.ts';

export const CLUSTER_SELECTION: FlagGroup = {
  title: 'Cluster selection',
  flags: [
    { flags: '--kubeconfig <file>', description: 'kubeconfig (default: $KUBECONFIG, ~/.kube/config)' },
    {
      flags: '--context <name>',
      description: 'kubeconfig context (repeat: several clusters)',
      repeatable: true,
    },
    { flags: '--all-contexts', description: 'every context of the kubeconfig, each a cluster' },
    {
      flags: '-n, --namespace <ns>',
      description: 'only this namespace (repeatable, or a,b)',
      repeatable: true,
    },
    {
      flags: '--exclude-namespace <ns>',
      description: 'skip this namespace (repeatable, or a,b)',
      repeatable: true,
    },
    {
      flags: '-r, --resource <name>',
      description: 'only this type: pods, deploy, widgets.example.com',
      repeatable: true,
    },
    {
      flags: '--exclude-resource <name>',
      description: 'skip this resource type (repeatable)',
      repeatable: true,
    },
    { flags: '-l, --selector <selector>', description: 'only objects whose labels match: app=web,tier!=db' },
  ],
};
