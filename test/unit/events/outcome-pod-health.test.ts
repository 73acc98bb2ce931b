// The pod rules (src/events/outcomes/pod-health.ts) against pods recorded from the pod plane.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isFailingReason,
  judgePod,
  podHealthOf,
  podReason,
  UNSCHEDULABLE_AFTER_MS,
} from '../../../src/events/outcomes/pod-health.ts';
import { recorded } from '../../helpers/outcome-fixtures.ts';

const NOW = Date.parse('2026-12-01T23:30:00Z');

describe('the health of a pod', () => {
  it('a Running and Ready pod is healthy, with its controller, revision and when it became ready', () => {
    const pod = recorded('pod-ready');
    const health = podHealthOf(pod, undefined, NOW);
    assert.equal(health.ownerKind, 'ReplicaSet');
    assert.equal(health.owner, (pod.metadata.ownerReferences as { uid: string }[])[0]?.uid);
    assert.equal(health.revision, pod.metadata.labels?.['pod-template-hash']);
    assert.equal(health.ready, true);
    assert.match(health.readySince ?? '', /^\d{4}-\d\d-\d\dT/);
    assert.equal(judgePod(health, 0, NOW), 'healthy');
    assert.equal(podReason(health, NOW), undefined);
  });

  it('an OOM-killed pod in CrashLoopBackOff fails, naming OOMKilled, exit 137 and its restarts', () => {
    const health = podHealthOf(recorded('pod-oom-crashloop'), undefined, NOW);
    assert.deepEqual(
      { reason: health.problem?.reason, container: health.problem?.container },
      { reason: 'CrashLoopBackOff', container: 'app' },
    );
    assert.equal(health.lastTermination?.reason, 'OOMKilled');
    assert.equal(health.lastTermination?.exitCode, 137);
    assert.equal(health.restarts, 2);
    assert.equal(judgePod(health, 0, NOW), 'failing');
  });

  it('an OOM-killed pod running again, not ready, fails once it restarted since the change', () => {
    const health = podHealthOf(recorded('pod-oom-running-again'), undefined, NOW);
    assert.equal(health.problem, undefined);
    assert.equal(health.ready, false);
    assert.equal(judgePod(health, 0, NOW), 'failing');
    // Its restarts all happened before the change: on its way, as far as the change is concerned.
    assert.equal(judgePod(health, health.restarts, NOW), 'starting');
  });

  it('ImagePullBackOff fails the pod; ErrImagePull (one failed pull, retried) does not yet', () => {
    const backOff = podHealthOf(recorded('pod-image-pull-backoff'), undefined, NOW);
    assert.equal(backOff.problem?.reason, 'ImagePullBackOff');
    assert.match(backOff.problem?.message ?? '', /does-not-exist/);
    assert.equal(judgePod(backOff, 0, NOW), 'failing');
    const pulling = podHealthOf(recorded('pod-err-image-pull'), undefined, NOW);
    assert.equal(pulling.problem, undefined);
    assert.equal(pulling.waiting, 'ErrImagePull');
    assert.equal(judgePod(pulling, 0, NOW), 'starting');
    assert.equal(podReason(pulling, NOW), 'ErrImagePull');
  });

  it('a pod that runs and never gets ready is on its way, not failing', () => {
    const health = podHealthOf(recorded('pod-running-unready'), undefined, NOW);
    assert.equal(judgePod(health, 0, NOW), 'starting');
    assert.equal(podReason(health, NOW), 'NotReady');
  });

  it('an unschedulable pod fails only after 15 s of being so, on kubediff’s clock', () => {
    const first = podHealthOf(recorded('pod-unschedulable'), undefined, NOW);
    assert.equal(first.unschedulable?.since, NOW);
    assert.match(first.unschedulable?.message ?? '', /didn't match Pod's node affinity\/selector/);
    assert.equal(judgePod(first, 0, NOW), 'starting');
    // The next version keeps when it was first seen so.
    const later = NOW + UNSCHEDULABLE_AFTER_MS;
    const again = podHealthOf(recorded('pod-unschedulable'), first, later);
    assert.equal(again.unschedulable?.since, NOW);
    assert.equal(judgePod(again, 0, later - 1), 'starting');
    assert.equal(judgePod(again, 0, later), 'failing');
    assert.equal(podReason(again, later), 'Unschedulable');
  });

  it("a Job's failed pod is left to its Job; another workload's failed pod fails", () => {
    const health = podHealthOf(recorded('pod-job-failed'), undefined, NOW);
    assert.equal(health.finite, true);
    assert.equal(health.phase, 'Failed');
    assert.equal(judgePod(health, 0, NOW), 'starting');
    const ready = recorded('pod-ready');
    (ready.status as { phase: string }).phase = 'Failed';
    const evicted = podHealthOf(ready, undefined, NOW);
    assert.equal(evicted.ready, true);
    assert.equal(judgePod({ ...evicted, ready: false }, 0, NOW), 'failing');
  });

  it('the failing waiting reasons are those Argo CD names: Err…, …Error, …BackOff', () => {
    for (const reason of [
      'CrashLoopBackOff',
      'ImagePullBackOff',
      'ErrImageNeverPull',
      'CreateContainerConfigError',
    ])
      assert.equal(isFailingReason(reason), true, reason);
    for (const reason of ['ContainerCreating', 'PodInitializing', 'ErrImagePull'])
      assert.equal(isFailingReason(reason), false, reason);
  });

  it('reads a pod that says nothing of its status', () => {
    const health = podHealthOf({ metadata: { name: 'p', uid: 'u', resourceVersion: '1' } }, undefined, NOW);
    assert.deepEqual(
      { phase: health.phase, ready: health.ready, restarts: health.restarts, owner: health.owner },
      { phase: 'Pending', ready: false, restarts: 0, owner: undefined },
    );
  });
});
