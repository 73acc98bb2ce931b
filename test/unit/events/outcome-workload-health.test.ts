// The workload rules (src/events/outcomes/workload-health.ts) against workloads recorded from the pod plane.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  judgeWorkload,
  replicaSetHealthOf,
  type WorkloadKind,
  workloadHealthOf,
} from '../../../src/events/outcomes/workload-health.ts';
import { recorded } from '../../helpers/outcome-fixtures.ts';

const of = (kind: WorkloadKind, name: string) => workloadHealthOf(kind, recorded(name));

describe('where a workload rollout stands', () => {
  it('a Deployment whose new replicas are all available is done', () => {
    const deployment = of('Deployment', 'deployment-healthy');
    assert.equal(deployment.revision, '1');
    assert.deepEqual(judgeWorkload(deployment, deployment.generation).state, 'done');
  });

  it('a Deployment whose progress deadline passed has failed, with its controller’s message', () => {
    const deployment = of('Deployment', 'deployment-deadline-exceeded');
    const progress = judgeWorkload(deployment, deployment.generation);
    assert.equal(progress.state, 'failed');
    assert.match(progress.detail, /has timed out progressing/);
  });

  it('a Deployment with fewer available replicas than updated is on its way', () => {
    const deployment = of('Deployment', 'deployment-progressing');
    assert.equal(judgeWorkload(deployment, deployment.generation).state, 'progressing');
  });

  it('nothing is judged before the controller observed the generation followed', () => {
    const deployment = of('Deployment', 'deployment-healthy');
    const progress = judgeWorkload(deployment, deployment.generation + 1);
    assert.deepEqual(progress, {
      state: 'progressing',
      detail: 'its controller has not yet observed the change',
    });
  });

  it('a paused Deployment waits', () => {
    const object = recorded('deployment-healthy');
    (object.spec as { paused?: boolean }).paused = true;
    assert.equal(judgeWorkload(workloadHealthOf('Deployment', object), 1).state, 'waiting');
  });

  it('a StatefulSet is done when its current revision is its update revision, on its way meanwhile', () => {
    const done = of('StatefulSet', 'statefulset-healthy');
    assert.equal(judgeWorkload(done, done.generation).state, 'done');
    const rolling = of('StatefulSet', 'statefulset-rolling');
    assert.notEqual(rolling.revision, rolling.currentRevision);
    assert.equal(judgeWorkload(rolling, rolling.generation).state, 'progressing');
  });

  it('a StatefulSet with a partition is done once the replicas above it are updated; OnDelete once observed', () => {
    const object = recorded('statefulset-rolling');
    const spec = object.spec as { updateStrategy: { type: string; rollingUpdate?: { partition: number } } };
    spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { partition: 2 } };
    const partitioned = workloadHealthOf('StatefulSet', object);
    assert.equal(
      judgeWorkload({ ...partitioned, ready: partitioned.desired }, partitioned.generation).state,
      'done',
    );
    spec.updateStrategy = { type: 'OnDelete' };
    const onDelete = workloadHealthOf('StatefulSet', object);
    assert.equal(judgeWorkload(onDelete, onDelete.generation).state, 'done');
  });

  it('a DaemonSet is done when every scheduled pod is updated and available', () => {
    const daemonSet = of('DaemonSet', 'daemonset-healthy');
    assert.equal(daemonSet.desired, 3);
    assert.equal(judgeWorkload(daemonSet, daemonSet.generation).state, 'done');
    assert.equal(judgeWorkload({ ...daemonSet, available: 2 }, daemonSet.generation).state, 'progressing');
  });

  it("a Job's Complete condition is done, its Failed condition failed", () => {
    assert.equal(judgeWorkload(of('Job', 'job-complete'), 0).state, 'done');
    const failed = judgeWorkload(of('Job', 'job-failed'), 0);
    assert.equal(failed.state, 'failed');
    assert.match(failed.detail, /backoff limit/i);
  });

  it('a ReplicaSet names its Deployment and its revision', () => {
    const replicaSet = replicaSetHealthOf(recorded('replicaset'));
    assert.equal(replicaSet.revision, '1');
    assert.equal(replicaSet.owner, recorded('deployment-healthy').metadata.uid);
    assert.equal(replicaSet.failure, undefined);
  });
});
