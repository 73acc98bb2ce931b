// src/config/service-settings.ts: --listen, --ready-failure-threshold, --leader-elect and its settings.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serviceOptionsFromFlags } from '../../../src/config/service-settings.ts';
import { microTime } from '../../../src/kube/leader-election.ts';

test('defaults: no server, no election, 60s threshold', () => {
  assert.deepEqual(serviceOptionsFromFlags({}, {}), {
    listen: undefined,
    readyFailureThresholdMs: 60_000,
    leaderElection: undefined,
    logFormat: 'auto',
  });
});

test("--leader-elect: client-go's durations, the pod's name and namespace", () => {
  const options = serviceOptionsFromFlags(
    { leaderElect: true },
    { POD_NAME: 'kubediff-7d9f-abcde', POD_NAMESPACE: 'ops' },
  );
  assert.deepEqual(options.leaderElection, {
    namespace: 'ops',
    name: 'kubediff',
    identity: `kubediff-7d9f-abcde_${process.pid}`,
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
  });
});

test("--leader-elect: the Lease is named after the pod's Deployment, so that two installs in one namespace never share one", () => {
  const leaseOf = (env: NodeJS.ProcessEnv) =>
    serviceOptionsFromFlags({ leaderElect: true }, env).leaderElection?.name;
  // <deployment>-<pod-template-hash>-<5 random>, as a ReplicaSet names its pods.
  assert.equal(leaseOf({ POD_NAME: 'kubediff-7c9dbf5bd4-x2lqz' }), 'kubediff');
  assert.equal(leaseOf({ POD_NAME: 'team-a-kubediff-7c9dbf5bd4-x2lqz' }), 'team-a-kubediff');
  assert.equal(leaseOf({ POD_NAME: 'shop-kubediff-6b4f9d8c7-q8wzn' }), 'shop-kubediff');
  // Not a Deployment's replica (a StatefulSet's, a bare pod, a laptop): kubediff.
  assert.equal(leaseOf({ POD_NAME: 'kubediff-0' }), 'kubediff');
  assert.equal(leaseOf({}), 'kubediff');
  assert.equal(
    serviceOptionsFromFlags(
      { leaderElect: true, leaderElectionId: 'mine' },
      { POD_NAME: 'x-7c9dbf5bd4-x2lqz' },
    ).leaderElection?.name,
    'mine',
  );
});

test('usage errors name the flag', () => {
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ listen: 'x' }, /--listen/],
    [{ readyFailureThreshold: 'soon' }, /--ready-failure-threshold "soon"/],
    [{ leaderElectionId: 'x' }, /--leader-election-id needs --leader-elect/],
    [{ leaderElect: true, leaderElectionLeaseDuration: '5s' }, /lease-duration must be longer than/],
    [{ leaderElect: true, leaderElectionRetryPeriod: '9s' }, /renew-deadline must be longer than 1\.2/],
    [{ leaderElect: true, leaderElectionId: 'Bad_Name' }, /invalid --leader-election-id/],
    [{ logFormat: 'xml' }, /--log-format "xml"/],
  ];
  for (const [flags, pattern] of bad) assert.throws(() => serviceOptionsFromFlags(flags, {}), pattern);
});

test('Lease times are RFC 3339 with microseconds', () => {
  assert.equal(microTime(Date.UTC(2026, 10, 22, 10, 31, 7, 412)), '2026-11-22T10:31:07.412000Z');
});
