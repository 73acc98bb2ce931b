// Stories on the timeline (src/ui/web/stories.ts): the events of one root controller close in time are one
// mark with its count, per row; a pause longer than STORY_GAP_MS starts a new story; alone, an event
// stays a single mark.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EventSummary } from '../../../src/state/timeline-reader.ts';
import { groupStories, STORY_GAP_MS, storyText } from '../../../src/ui/web/stories.ts';

const T0 = Date.parse('2026-03-04T14:05:00Z');

function event(seq: number, at: number, kind: string, name: string, extra: Partial<EventSummary> = {}) {
  const summary: EventSummary = {
    seq,
    id: `u${seq}`,
    time: new Date(T0 + at).toISOString(),
    type: 'ADDED',
    resource: `${kind.toLowerCase()}s`,
    kind,
    namespace: 'shop',
    name,
    uid: `u${seq}`,
    changes: 0,
    ...extra,
  };
  return summary;
}

const web = { kind: 'Deployment', name: 'web' };
const byNamespace = (summary: EventSummary) => summary.namespace ?? '-';

describe('stories', () => {
  it('a rollout (the Deployment, its ReplicaSet, its Pods) is one story; a ConfigMap alone stays single', () => {
    const marks = [
      event(1, 0, 'Deployment', 'web', { type: 'UPDATED', changes: 1 }),
      event(2, 100, 'ReplicaSet', 'web-7d9', { owner: web }),
      event(3, 200, 'Pod', 'web-7d9-a', { owner: web }),
      event(4, 300, 'Pod', 'web-7d9-b', { owner: web }),
      event(5, 150, 'ConfigMap', 'web-config', { type: 'UPDATED', changes: 1 }),
    ];
    const { stories, single } = groupStories(marks, byNamespace);
    assert.deepEqual(
      stories.map((story) => [story.key, story.events.map((item) => item.seq)]),
      [['1', [1, 2, 3, 4]]],
    );
    assert.deepEqual(
      single.map((item) => item.seq),
      [5],
    );
    assert.equal(storyText(stories[0]!), 'Deployment shop/web: 4 events (3 added, 1 updated)');
    const degraded = {
      ...stories[0]!,
      events: [
        ...stories[0]!.events,
        event(9, 1, 'Deployment', 'web', {
          type: 'UPDATED',
          outcome: { verdict: 'degraded', summary: '1/1 pods ImagePullBackOff' },
        }),
      ],
    };
    assert.equal(storyText(degraded), 'Deployment shop/web: 5 events (3 added, 2 updated) → degraded');
  });

  it('one object changed several times stays single marks: a story is several objects', () => {
    const marks = [
      event(1, 0, 'ConfigMap', 'flags'),
      event(2, 1000, 'ConfigMap', 'flags', { type: 'UPDATED', changes: 1 }),
      event(3, 2000, 'ConfigMap', 'flags', { type: 'DELETED' }),
    ];
    const { stories, single } = groupStories(marks, byNamespace);
    assert.deepEqual(stories, []);
    assert.deepEqual(
      single.map((item) => item.seq),
      [1, 2, 3],
    );
  });

  it('a pause longer than the gap starts a new story; rows by kind keep each kind in its row', () => {
    const marks = [
      event(1, 0, 'Pod', 'a', { owner: web }),
      event(2, 1000, 'Pod', 'b', { owner: web }),
      event(3, 1000 + STORY_GAP_MS + 1, 'Pod', 'c', { owner: web }),
      event(4, 2000 + STORY_GAP_MS, 'Pod', 'd', { owner: web }),
      event(5, 1500, 'ReplicaSet', 'web-1', { owner: web }),
    ];
    const { stories, single } = groupStories(marks, (summary) => summary.resource);
    assert.deepEqual(
      stories.map((story) => [story.row, story.events.map((item) => item.seq)]),
      [
        ['pods', [1, 2]],
        ['pods', [3, 4]],
      ],
    );
    assert.deepEqual(
      single.map((item) => item.seq),
      [5],
    );
  });
});
