// The test cluster, as seen from inside a test process. scripts/run-tests.ts (npm test) starts one
// cluster per run and passes its description (a JSON file, see ClusterInfo) in KUBEDIFF_TEST_CLUSTER.
// To iterate on one test file against `npm run cluster:up`'s cluster:
//   KUBEDIFF_TEST_CLUSTER=.cache/cluster/state.json node --test test/integration/x.test.ts
import type { ClusterInfo } from './cluster.ts';
import { readRunDescription } from './run-description.ts';

let cached: ClusterInfo | undefined;

/** The cluster this test run uses. Throws when the test was not started by `npm test`. */
export function testCluster(): ClusterInfo {
  if (!cached) {
    const info = readRunDescription<Omit<ClusterInfo, 'external'> & { external?: boolean }>(
      'KUBEDIFF_TEST_CLUSTER',
      'the test cluster',
      (value) =>
        typeof value.server !== 'string' || typeof value.kubeconfigPath !== 'string'
          ? 'server/kubeconfigPath'
          : undefined,
    );
    // A state.json of `npm run cluster:up` is a cluster of ours, with or without the field.
    cached = { ...info, external: info.external ?? false };
  }
  return cached;
}

/**
 * Why a test that needs etcd access (compactEtcd) cannot run here, or undefined when it can.
 * Use as `test('…', { skip: needsEtcd() }, …)`.
 */
export function needsEtcd(): string | undefined {
  return testCluster().etcdEndpoint
    ? undefined
    : 'needs direct etcd access to compact it (not available with USE_EXISTING_CLUSTER=true)';
}

/** Why a test that needs the rights-less user cannot run here, or undefined when it can. */
export function needsNobody(): string | undefined {
  return testCluster().nobodyToken ? undefined : 'the cluster offers no user without rights';
}
