// Where `show`, `diff` and `blame` read the history, and which object's: the state, the cluster and the
// namespace (kubectl's -n). Read by src/cli/object-history/history-source.ts.
import type { FlagSpec } from '../../util/flag-spec.ts';

export const HISTORY_SOURCE: readonly FlagSpec[] = [
  { flags: '--state <file|url>', description: 'the state file or postgres:// URL that watch writes' },
  { flags: '-c, --config <file>', description: 'take the state from this config file (state.path)' },
  { flags: '--cluster <name>', description: 'the cluster, in a PostgreSQL history of several' },
];

/** The object's namespace, as kubectl's -n: `default` when not given. */
export const OBJECT_NAMESPACE: FlagSpec = {
  flags: '-n, --namespace <ns>',
  description: "the object's namespace (default: default)",
};
