// Owners and stories in-process, with mock timers: the root controller through stores and recent
// deletions, the story window and its bounds, net diffs, the summary line, and the Slack and terminal
// renderings within their limits. The real thing (rollouts by the real controllers) is
// test/integration/stories.test.ts.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { Change } from '../../../src/diff/types.ts';
import type { OwnerRef } from '../../../src/events/event.ts';
import { OwnerResolver } from '../../../src/events/owners.ts';
import { type Story, StoryBuilder, type StoryOptions } from '../../../src/events/story.ts';
import type { StoredObject } from '../../../src/informer/store.ts';
import type { JsonObject, ResourceType } from '../../../src/kube/types.ts';
import { renderSlackChatMessage } from '../../../src/sinks/chat/slack/slack-format.ts';
import { prettyStoryRenderer, storyMessage } from '../../../src/sinks/core/story-format.ts';
import { sampleEvent, type TestEvent } from '../../helpers/events.ts';
import { blockKitProblems, visibleText } from '../../helpers/slack-payload.ts';

const DEPLOY: OwnerRef = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'd1' };

function event(
  kind: string,
  name: string,
  uid: string,
  type: TestEvent['type'],
  rv: number,
  changes?: Change[],
  owner: OwnerRef = DEPLOY,
): TestEvent {
  const resource = kind === 'Pod' ? 'pods' : `${kind.toLowerCase()}s`;
  const base = sampleEvent({
    id: `${uid}:${rv}`,
    type,
    time: new Date(Date.now()).toISOString(),
    object: {
      apiVersion: kind === 'Pod' ? 'v1' : 'apps/v1',
      kind,
      resource,
      name,
      uid,
      resourceVersion: String(rv),
    },
    owner,
  });
  const { changes: _sample, ...rest } = base;
  return type === 'UPDATED' ? { ...rest, changes: changes ?? [] } : rest;
}

const replicas = (from: number, to: number): Change => ({ op: 'replace', path: '/spec/replicas', from, to });
const IMAGE = '/spec/template/spec/containers/0/image';

function builder(options: Partial<StoryOptions> = {}): { stories: Story[]; full: number; b: StoryBuilder } {
  const result = { stories: [] as Story[], full: 0, b: undefined as unknown as StoryBuilder };
  result.b = new StoryBuilder(
    { windowMs: 1_000, maxLengthMs: 10_000, ...options },
    { story: (story) => result.stories.push(story), bufferFull: () => result.full++ },
  );
  return result;
}

describe('stories', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_700_000_000_000 }));
  afterEach(() => mock.timers.reset());

  it('a rollout: the owner net change, then what was derived, every event counted by id', () => {
    const { stories, b } = builder();
    b.add(
      event('Deployment', 'web', 'd1', 'UPDATED', 2, [
        { op: 'replace', path: IMAGE, from: 'shop:1.4', to: 'shop:1.5' },
      ]),
    );
    b.add(event('ReplicaSet', 'web-7d9', 'r2', 'ADDED', 3));
    b.add(event('ReplicaSet', 'web-7d9', 'r2', 'UPDATED', 4, [replicas(1, 2)]));
    b.add(event('ReplicaSet', 'web-7d9', 'r2', 'UPDATED', 5, [replicas(2, 3)]));
    b.add(event('ReplicaSet', 'web-5c4', 'r1', 'UPDATED', 6, [replicas(3, 0)]));
    for (const n of [1, 2, 3]) b.add(event('Pod', `old-${n}`, `p${n}`, 'DELETED', 10 + n));
    for (const n of [4, 5, 6]) b.add(event('Pod', `new-${n}`, `p${n}`, 'ADDED', 10 + n));
    mock.timers.tick(999);
    assert.equal(stories.length, 0, 'the window is still open');
    mock.timers.tick(1);
    assert.equal(stories.length, 1);
    const story = stories[0]!;
    assert.equal(story.closed, 'quiet');
    assert.equal(story.count, 11);
    assert.deepEqual(
      story.events.map((e) => e.id),
      ['d1:2', 'r2:3', 'r2:4', 'r2:5', 'r1:6', 'p1:11', 'p2:12', 'p3:13', 'p4:14', 'p5:15', 'p6:16'],
    );
    assert.deepEqual(story.ownerChange?.changes, [
      { op: 'replace', path: IMAGE, from: 'shop:1.4', to: 'shop:1.5' },
    ]);
    assert.equal(
      story.summary,
      'ReplicaSet web-7d9 created, scaled 1→3; ReplicaSet web-5c4 scaled 3→0; 3 pods replaced',
    );
    assert.deepEqual(
      story.counts.map((c) => [c.kind, c.ADDED, c.UPDATED, c.DELETED]),
      [
        ['Deployment', 0, 1, 0],
        ['ReplicaSet', 1, 3, 0],
        ['Pod', 3, 0, 3],
      ],
    );
    assert.equal(b.stats().openEvents, 0);

    const slack = renderSlackChatMessage(storyMessage(story));
    assert.deepEqual(blockKitProblems(slack), []);
    const text = visibleText(slack);
    assert.match(text, /Deployment shop\/web updated/);
    assert.match(text, /`"shop:1\.4"` → `"shop:1\.5"`/);
    assert.match(
      text,
      /\*Derived:\* ReplicaSet web-7d9 created, scaled 1→3; ReplicaSet web-5c4 scaled 3→0; 3 pods replaced/,
    );
    assert.match(
      text,
      /11 events: 1 Deployment updated, 1 ReplicaSet added, 3 ReplicaSets updated, 3 Pods added, 3 Pods deleted/,
    );
    const pretty = prettyStoryRenderer({ color: false })(story);
    assert.equal(
      pretty,
      [
        `${story.from.slice(11, 19)}Z STORY   Deployment shop/web updated [prod]`,
        '  ~ spec.template.spec.containers[0].image: "shop:1.4" → "shop:1.5"',
        '  ↳ ReplicaSet web-7d9 created, scaled 1→3; ReplicaSet web-5c4 scaled 3→0; 3 pods replaced (11 events: 1 Deployment updated, 1 ReplicaSet added, 3 ReplicaSets updated, 3 Pods added, 3 Pods deleted)',
        '',
      ].join('\n'),
    );
  });

  it('a value that went back where it was is no change; the story says so', () => {
    const { stories, b } = builder();
    b.add(
      event('Deployment', 'web', 'd1', 'UPDATED', 2, [
        replicas(3, 5),
        { op: 'add', path: '/metadata/labels/x', to: 'y' },
      ]),
    );
    mock.timers.tick(500);
    b.add(
      event('Deployment', 'web', 'd1', 'UPDATED', 3, [
        replicas(5, 3),
        { op: 'remove', path: '/metadata/labels/x', from: 'y' },
      ]),
    );
    b.add(event('Pod', 'extra', 'p9', 'ADDED', 4));
    b.add(event('Pod', 'extra', 'p9', 'DELETED', 5));
    b.flush();
    assert.equal(stories.length, 1);
    assert.equal(stories[0]!.closed, 'shutdown');
    assert.deepEqual(stories[0]!.ownerChange?.changes, []);
    assert.equal(stories[0]!.summary, '1 pod created and deleted');
    assert.match(
      visibleText(renderSlackChatMessage(storyMessage(stories[0]!))),
      /Deployment shop\/web: no net change/,
    );
  });

  it('a long rollout reports at its maximum length and goes on in a continued story', () => {
    const { stories, b } = builder({ windowMs: 1_000, maxLengthMs: 3_000 });
    for (let i = 0; i < 6; i++) {
      b.add(event('ReplicaSet', 'web-7d9', 'r2', 'UPDATED', 10 + i, [replicas(i, i + 1)]));
      mock.timers.tick(800);
    }
    mock.timers.tick(1_000);
    assert.deepEqual(
      stories.map((s) => [s.closed, s.continued ?? false, s.count]),
      [
        ['max-length', false, 4],
        ['quiet', true, 2],
      ],
    );
    assert.equal(stories[0]!.summary, 'ReplicaSet web-7d9 scaled 0→4');
  });

  it('the open stories are bounded: at the limit the oldest is told early, said once', () => {
    const built = builder({ maxOpenEvents: 3 });
    const { stories, b } = built;
    const other: OwnerRef = { ...DEPLOY, name: 'api', uid: 'd2' };
    b.add(event('Deployment', 'web', 'd1', 'UPDATED', 1, [replicas(1, 2)]));
    b.add(event('Deployment', 'web', 'd1', 'UPDATED', 2, [replicas(2, 3)]));
    b.add(event('Deployment', 'api', 'd2', 'UPDATED', 3, [replicas(1, 2)], other));
    assert.equal(stories.length, 0);
    b.add(event('Deployment', 'api', 'd2', 'UPDATED', 4, [replicas(2, 3)], other));
    assert.deepEqual(
      stories.map((s) => [s.owner.name, s.closed, s.count]),
      [['web', 'buffer', 2]],
    );
    assert.equal(b.stats().openEvents, 2);
    assert.equal(b.stats().closedAtBufferLimit, 1);
    assert.ok(built.full >= 1);
    b.flush();
    assert.equal(
      stories.reduce((sum, s) => sum + s.count, 0),
      4,
      'nothing dropped',
    );
  });

  it('dependents seen before their owner was known join the owner story when it is', () => {
    const { stories, b } = builder();
    const rs: OwnerRef = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9', uid: 'r2' };
    b.add(event('Pod', 'new-1', 'p1', 'ADDED', 1, undefined, rs));
    b.add(event('ReplicaSet', 'web-7d9', 'r2', 'ADDED', 2));
    mock.timers.tick(1_000);
    assert.deepEqual(
      stories.map((s) => [s.owner.uid, s.count]),
      [['d1', 2]],
    );
  });

  it('two owners at once: two stories, never mixed', () => {
    const { stories, b } = builder();
    const api: OwnerRef = { ...DEPLOY, name: 'api', uid: 'd2' };
    b.add(event('Pod', 'web-1', 'p1', 'ADDED', 1));
    b.add(event('Pod', 'api-1', 'p2', 'ADDED', 2, undefined, api));
    b.add(event('Pod', 'web-2', 'p3', 'ADDED', 3));
    mock.timers.tick(1_000);
    // Both went quiet at the same moment: which is told first does not matter.
    assert.deepEqual(stories.map((s) => [s.owner.name, s.events.map((e) => e.object.name)]).sort(), [
      ['api', ['api-1']],
      ['web', ['web-1', 'web-2']],
    ]);
  });
});

describe('owners', () => {
  const types: Record<string, ResourceType> = Object.fromEntries(
    [
      ['', 'v1', 'pods', 'Pod'],
      ['apps', 'v1', 'replicasets', 'ReplicaSet'],
      ['apps', 'v1', 'deployments', 'Deployment'],
    ].map(([group, version, resource, kind]) => [
      kind,
      {
        group,
        version,
        resource,
        kind,
        namespaced: true,
        verbs: [],
        shortNames: [],
        singularName: '',
        categories: [],
      } as ResourceType,
    ]),
  );
  function stored(name: string, uid: string, controller?: OwnerRef): StoredObject {
    const metadata: JsonObject = { name, uid };
    if (controller) metadata.ownerReferences = [{ ...controller, controller: true }];
    return { key: `shop/${name}`, namespace: 'shop', name, uid, resourceVersion: '1', object: { metadata } };
  }
  const rsRef: OwnerRef = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9', uid: 'r2' };

  it('follows controller references through the stores to the root', () => {
    const objects = new Map([
      ['apps/ReplicaSet/shop/web-7d9', stored('web-7d9', 'r2', DEPLOY)],
      ['apps/Deployment/shop/web', stored('web', 'd1')],
    ]);
    const resolver = new OwnerResolver();
    resolver.attach('prod', (group, kind, ns, name) => objects.get(`${group}/${kind}/${ns}/${name}`));
    assert.deepEqual(resolver.rootOf('prod', types.Pod!, stored('web-7d9-x', 'p1', rsRef)), DEPLOY);
    assert.deepEqual(resolver.rootOf('prod', types.Deployment!, stored('web', 'd1')), DEPLOY);
    // A ReplicaSet of that name but another uid (deleted and re-created) is not this pod's.
    objects.set('apps/ReplicaSet/shop/web-7d9', stored('web-7d9', 'r3', DEPLOY));
    assert.deepEqual(
      resolver.rootOf('prod', types.Pod!, stored('web-7d9-x', 'p1', rsRef)),
      rsRef,
      'nearest known',
    );
  });

  it('remembers recently deleted owners for their dependents, within its bound', () => {
    const resolver = new OwnerResolver({ recentlyDeletedLimit: 1 });
    resolver.attach(undefined, () => undefined);
    resolver.forget(stored('web-7d9', 'r2', DEPLOY));
    assert.deepEqual(resolver.rootOf(undefined, types.Pod!, stored('web-7d9-x', 'p1', rsRef)), DEPLOY);
    resolver.forget(stored('other', 'r9', DEPLOY));
    assert.deepEqual(resolver.rootOf(undefined, types.Pod!, stored('web-7d9-x', 'p1', rsRef)), rsRef);
  });

  it('stops at a cycle', () => {
    const a: OwnerRef = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'a', uid: 'a' };
    const bRef: OwnerRef = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'b', uid: 'b' };
    const objects = new Map([
      ['a', stored('a', 'a', bRef)],
      ['b', stored('b', 'b', a)],
    ]);
    const resolver = new OwnerResolver();
    resolver.attach(undefined, (_g, _k, _ns, name) => objects.get(name));
    assert.deepEqual(resolver.rootOf(undefined, types.ReplicaSet!, stored('a', 'a', bRef)), bRef);
  });
});
