// A new leader's claim on a shared store (src/state/leader-claim.ts), against an in-memory store that
// answers as PostgreSQL's claims do (the real one: test/integration/leader-postgres.test.ts): it waits
// while the previous leader holds the claim, ends that session after the grace period, then makes the
// snapshot its own. Mock clock.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, mock, test } from 'node:test';
import { SIGNATURE_KEY } from '../../../src/state/catch-up.ts';
import { FollowedVersions } from '../../../src/state/followed-versions.ts';
import { LeaderClaim } from '../../../src/state/leader-claim.ts';
import { ListedTypes } from '../../../src/state/listed-types.ts';
import type { ClaimedStateStore, SerializedWrite, StoredResource } from '../../../src/state/store.ts';
import { silentLogger } from '../../../src/util/log.ts';
import { configmaps, secrets } from '../../helpers/resource-types.ts';
import { fakeInformer, storedObject } from '../../helpers/state-fixtures.ts';

/** A shared store whose claim another session holds until `held` is false. */
class SharedStore implements ClaimedStateStore {
  readonly label = 'postgres://db/state';
  held = true;
  fenced = 0;
  released = 0;
  readonly meta = new Map<string, string>();
  readonly recorded = new Map<string, Map<string, string>>();
  readonly writes: string[] = [];
  listed = new Map<string, string>();

  async claim() {
    return !this.held;
  }
  async fence() {
    this.fenced++;
    return 1;
  }
  async release() {
    this.released++;
  }
  async objectVersions(resource: string) {
    return new Map(this.recorded.get(resource) ?? []);
  }
  async getMeta(key: string) {
    return this.meta.get(key);
  }
  async setMeta(key: string, value: string) {
    this.meta.set(key, value);
  }
  async resources(): Promise<StoredResource[]> {
    return [...this.recorded.keys()].map((resource) => ({ resource }) as StoredResource);
  }
  async objects() {
    return [];
  }
  async forgetObjects() {}
  async forgetFollowed() {}
  async write(batch: readonly SerializedWrite[], listed: ReadonlyMap<string, string>) {
    for (const write of batch)
      this.writes.push(
        write.kind === 'object' || write.kind === 'delete' ? `${write.kind} ${write.key}` : `${write.kind}`,
      );
    for (const [resource, version] of listed) this.listed.set(resource, version);
  }
  async prune() {
    return 0;
  }
  isTransient() {
    return false;
  }
  async close() {}
}

beforeEach(() => mock.timers.enable({ apis: ['Date'], now: 1_000_000 }));
afterEach(() => mock.timers.reset());

test('a new leader waits while the previous one holds the claim, ends its session after the grace period, then claims', async () => {
  const store = new SharedStore();
  const infos: string[] = [];
  const warnings: string[] = [];
  const claim = new LeaderClaim({
    store,
    log: {
      ...silentLogger,
      info: (message: string) => infos.push(message),
      warn: (message: string) => warnings.push(message),
    },
    fenceAfterMs: 15_000,
  });
  const snapshot = {
    note: undefined,
    signature: 's',
    informers: [],
    listed: new ListedTypes(),
    followed: new FollowedVersions(),
  };
  claim.begin();
  assert.equal(claim.waiting, true);
  assert.equal(await claim.take(snapshot), false);
  assert.equal(await claim.take(snapshot), false, 'not asked again before 0.5 s');
  mock.timers.tick(500);
  assert.equal(await claim.take(snapshot), false);
  assert.equal(infos.length, 1, 'the wait is said once');
  assert.match(
    infos[0] ?? '',
    /^state: waiting for the previous leader to commit and release its claim .* after 15s\)\.$/,
  );
  assert.equal(store.fenced, 0);
  mock.timers.tick(15_000);
  assert.equal(await claim.take(snapshot), false);
  assert.equal(store.fenced, 1);
  assert.match(
    warnings[0] ?? '',
    /^state: the previous leader still held the claim 15s after this replica took over; ended its database session/,
  );
  store.held = false;
  mock.timers.tick(500);
  assert.equal(await claim.take(snapshot), true);
  assert.equal(claim.waiting, false);
  assert.equal(store.fenced, 1, 'ended once');
  await claim.release();
  assert.equal(store.released, 1);
});

test("holding the claim, the snapshot becomes this replica's: changed objects written, gone ones removed, old types forgotten", async () => {
  const store = new SharedStore();
  store.held = false;
  // The previous leader recorded a@1, b@1 of configmaps, and pods, which this replica does not watch.
  store.recorded.set(
    'configmaps',
    new Map([
      ['ns/a', '1'],
      ['ns/b', '1'],
    ]),
  );
  store.recorded.set('pods', new Map([['ns/p', '1']]));
  const infos: string[] = [];
  const claim = new LeaderClaim({
    store,
    log: { ...silentLogger, info: (message: string) => infos.push(message) },
    fenceAfterMs: 15_000,
  });
  const cms = fakeInformer(configmaps);
  cms.hold(storedObject('a', '1'), storedObject('c', '2'));
  cms.sync('20');
  // secrets still listing: written, nothing removed, not marked listed.
  const keys = fakeInformer(secrets);
  keys.hold(storedObject('k', '3'));
  const listed = new ListedTypes();
  claim.begin();
  const note = { kind: 'resources' as const, entries: [] };
  assert.equal(
    await claim.take({
      note,
      signature: 'sig',
      informers: [cms.informer, keys.informer],
      listed,
      followed: new FollowedVersions(),
    }),
    true,
  );
  assert.deepEqual(store.writes, ['resources', 'forget', 'object ns/c', 'delete ns/b', 'object ns/k']);
  assert.equal(store.meta.get(SIGNATURE_KEY), 'sig');
  assert.deepEqual([...store.listed], [['configmaps', '20']]);
  assert.equal(listed.has('configmaps'), true);
  assert.equal(listed.has('secrets'), false);
  assert.deepEqual(infos, [
    'state: recording in postgres://db/state as the leader (snapshot brought up to date: 2 object(s) written, 1 removed).',
  ]);
});
