// The test cluster, as seen from inside a test process. scripts/run-tests.ts (npm test) starts one
// cluster per run and passes its description (a JSON file, see ClusterInfo) in KUBEDIFF_TEST_CLUSTER.
// To iterate on one test file against `npm run cluster:up`'s cluster:
//   KUBEDIFF_TEST_CLUSTER=.cache/cluster/state.json node --test test/integration/x.test.ts
import { readFileSync } from 'node:fs';
import type { ClusterInfo } from './cluster.ts';

let cached: ClusterInfo | undefined;

/** The cluster this test run uses. Throws when the test was not started by `npm test`. */
export function testCluster(): ClusterInfo {
  if (cached) return cached;
  const file = process.env.KUBEDIFF_TEST_CLUSTER;
  if (!file) {
    throw new Error(
      'KUBEDIFF_TEST_CLUSTER is not set: run the tests with npm test (or `npm test -- <files>` for a subset), which starts the test cluster.',
    );
  }
  let info: Partial<ClusterInfo>;
  try {
    info = JSON.parse(readFileSync(file, 'utf8')) as Partial<ClusterInfo>;
  } catch (error) {
    throw new Error(
      `KUBEDIFF_TEST_CLUSTER=${file} cannot be read (${error instanceof Error ? error.message : error}); run the tests with npm test.`,
    );
  }
  if (typeof info.server !== 'string' || typeof info.kubeconfigPath !== 'string') {
    throw new Error(`KUBEDIFF_TEST_CLUSTER=${file} does not describe a cluster (no server/kubeconfigPath).`);
  }
  cached = { external: false, ...info } as ClusterInfo;
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
