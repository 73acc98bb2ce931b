// Which types' objects in the store are a complete inventory (src/state/listed-types.ts): every informer
// of the type (one per namespace with -n) has ended its first LIST, and the LISTs' entries are committed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ListedTypes } from '../../../src/state/listed-types.ts';
import { serializeWrite } from '../../../src/state/store.ts';
import { WriteQueue } from '../../../src/state/write-queue.ts';
import { configmaps, secrets } from '../../helpers/resource-types.ts';
import { fakeInformer, storedObject } from '../../helpers/state-fixtures.ts';

const object = (name: string) =>
  serializeWrite({ kind: 'object', resource: 'configmaps', object: storedObject(name, '1') });

test('a type is listed once all its informers have listed and their entries are committed', () => {
  const listed = new ListedTypes();
  const queue = new WriteQueue();
  const shop = fakeInformer(configmaps, 'shop');
  const web = fakeInformer(configmaps, 'web');
  const keys = fakeInformer(secrets);
  const informers = [shop.informer, web.informer, keys.informer];

  queue.push(object('a'), [], true);
  shop.sync('10');
  assert.equal(listed.firstListEnded(shop.informer), true);
  assert.equal(listed.firstListEnded(shop.informer), false, 'once');
  queue.firstListEnded('configmaps');
  const first = queue.committable([], 100);
  assert.deepEqual([...listed.newlyListed(informers, queue, first)], [], 'web has not listed');
  queue.remove(first);

  queue.push(object('b'), [], true);
  web.sync('12');
  listed.firstListEnded(web.informer);
  queue.firstListEnded('configmaps');
  keys.sync('12');
  listed.firstListEnded(keys.informer);
  queue.firstListEnded('secrets');
  assert.deepEqual([...listed.newlyListed(informers, queue, [])], [['secrets', '12']], 'b not committed yet');
  const versions = listed.newlyListed(informers, queue, queue.committable([], 100));
  // configmaps per namespace (-n: an informer each), secrets as one.
  assert.deepEqual([...versions].sort(), [
    ['configmaps', '{"shop":"10","web":"12"}'],
    ['secrets', '12'],
  ]);
  listed.marked(versions);
  assert.equal(listed.has('configmaps'), true);
  assert.deepEqual([...listed.newlyListed(informers, queue, [])], [], 'marked once');
  assert.deepEqual(
    [
      ...listed.unmarked(
        new Map([
          ['secrets', '13'],
          ['pods', '1'],
        ]),
      ),
    ],
    [['pods', '1']],
  );
  // secrets stop being watched: listed again when they come back.
  listed.keepWatched(new Set(['configmaps']));
  assert.equal(listed.has('secrets'), false);
  assert.equal(listed.has('configmaps'), true);
});
