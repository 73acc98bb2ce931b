// The event contract over a real upgrade (issue 36, docs/event.md "Changes without a write"): per object,
// applying each reported change list, in order, as an RFC 6902 JSON Patch to the previous version gives
// the version the API server serves, none missed, none extra. The upgrade is a real project's:
// prometheus-operator's published CRDs and examples at consecutive releases (test/helpers/operator-releases.ts;
// v0.93.0 gave Prometheus `spec.shards` a `default: 1`), applied in order to the real API server while
// kubediff watches. The API server's own versions are read by the test: the object it answers for each
// write, and a GET of every object once it serves each release's schema.
import assert from 'node:assert/strict';
import { after, afterEach, test } from 'node:test';
import { DEFAULT_IGNORED_PATHS, PathMatcher } from '../../src/diff/ignore.ts';
import { Normalizer } from '../../src/diff/normalize.ts';
import { Redactor } from '../../src/diff/redact.ts';
import type { JsonObject, ResourceType } from '../../src/kube/types.ts';
import { jsonEqual } from '../../src/util/json-equal.ts';
import { killAll, runKubediff, WATCHING, watchArgs } from '../helpers/cli.ts';
import { describeEvent } from '../helpers/events.ts';
import { applyChanges } from '../helpers/json-patch.ts';
import { adminClient, type KubeBody, type KubeObject } from '../helpers/kube-admin.ts';
import { OPERATOR_RELEASES, releaseCRDs, releaseDir, releaseExamples } from '../helpers/operator-releases.ts';

const admin = adminClient();
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const FIELD_MANAGER = 'upgrade-test';
/** The API server retires a CRD's old storage (ending its watches) within twice its 60 s request timeout. */
const RETIRED_WITHIN_MS = 150_000;
const RELEASE_LABEL = 'kubediff.test/release';

afterEach(async () => {
  await killAll();
});
after(async () => {
  await admin.close();
});

interface CrdBody {
  metadata: { name: string };
  spec: { group: string; names: { kind: string; plural: string }; versions: { name: string }[] };
}
const crdOf = (body: KubeBody) => body as unknown as CrdBody;

/** What kubediff stores and diffs: the object without its default ignored paths. */
const normalizer = new Normalizer({
  ignore: new PathMatcher(DEFAULT_IGNORED_PATHS),
  redactor: new Redactor(),
});
const types = new Map<string, ResourceType>();
function normalized(object: KubeObject): JsonObject {
  const plural = `${object.kind}`;
  let type = types.get(plural);
  if (!type) {
    type = {
      group: 'monitoring.coreos.com',
      version: 'v1',
      resource: plural.toLowerCase(),
      kind: plural,
      namespaced: true,
    } as ResourceType;
    types.set(plural, type);
  }
  return normalizer.normalize(type, object as unknown as JsonObject);
}

/** Server-side apply, as `kubectl apply --server-side` of the release's files. */
function apply(path: string, body: KubeBody): Promise<KubeObject> {
  return admin.send('PATCH', path, {
    body,
    contentType: 'application/apply-patch+yaml',
    query: { fieldManager: FIELD_MANAGER, force: 'true' },
  });
}

async function applyCRDs(crds: readonly KubeBody[]): Promise<void> {
  // One after the other, as `kubectl apply -f` of the folder does (all at once, the API server answered 504
  // to some on the loaded 2-core machine: each one costs it seconds of OpenAPI building).
  for (const crd of crds) await apply(`${CRDS}/${crdOf(crd).metadata.name}`, crd);
  for (const crd of crds) {
    const name = crdOf(crd).metadata.name;
    await admin.waitFor(
      async () => {
        const status = (await admin.get(`${CRDS}/${name}`)).status as
          | { conditions?: { type: string; status: string }[] }
          | undefined;
        return status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
      },
      { what: `CRD ${name} to be Established`, timeoutMs: 60_000 },
    );
  }
}

/**
 * A watch of the type's objects in `ns`, opened before its CRD changes: the API server ends it when it
 * retires the type's old storage, after which every read is served in the new form.
 */
async function storageRetirement(collection: string): Promise<() => Promise<void>> {
  const listed = await admin.list(collection, { limit: 1 });
  const watch = await admin.watch(collection, {
    resourceVersion: listed.metadata.resourceVersion,
    timeoutSeconds: 600,
  });
  assert.equal(watch.status, 200, `watch of ${collection}`);
  const ended = (async () => {
    for await (const _event of watch.events) {
      // Events of the old storage; only the end matters.
    }
  })();
  return async () => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the API server did not retire the old storage of ${collection}`)),
        RETIRED_WITHIN_MS,
      );
    });
    try {
      await Promise.race([ended, late]);
    } finally {
      clearTimeout(timer);
      watch.close();
    }
  };
}

test(`prometheus-operator ${OPERATOR_RELEASES.join(' → ')}, applied while kubediff watches: every reported change, applied as a JSON Patch, gives the API server's next version; none missed, none extra`, async (t) => {
  const releases = OPERATOR_RELEASES.map((version) => {
    const dir = releaseDir(version);
    return { version, crds: releaseCRDs(dir), examples: releaseExamples(dir) };
  });
  const first = releases[0]!;
  const allCrdNames = [...new Set(releases.flatMap((r) => r.crds.map((crd) => crdOf(crd).metadata.name)))];
  // A clean slate (a run before this one on the same cluster left its CRDs at a later release), and after.
  for (const name of allCrdNames) await admin.deleteCRD(name, { wait: true });
  t.after(async () => {
    for (const name of allCrdNames) await admin.deleteCRD(name);
  });
  const ns = await admin.createNamespace('upgrade');
  t.after(() => admin.deleteNamespace(ns));

  const began = Date.now();
  await applyCRDs(first.crds);
  t.diagnostic(`${first.version}: ${first.crds.length} CRDs applied in ${Date.now() - began} ms`);
  const pluralOf = new Map(
    first.crds.map((crd) => [crdOf(crd).spec.names.kind, crdOf(crd).spec.names.plural]),
  );
  const collectionOf = (object: KubeBody) =>
    `/apis/${object.apiVersion}/namespaces/${ns}/${pluralOf.get(String(object.kind))}`;
  const pathOf = (object: KubeBody) =>
    `${collectionOf(object)}/${(object.metadata as { name: string }).name}`;

  /** The API server's versions by event id (uid:resourceVersion): what it answered for each write. */
  const written = new Map<string, JsonObject>();
  /** Per object (uid), the version the API server serves now, as far as the test knows. */
  const serving = new Map<string, JsonObject>();
  const objects = new Map<string, KubeBody>();
  for (const example of first.examples) {
    const created = await apply(pathOf(example), example);
    objects.set(created.metadata.uid, example);
  }

  const kd = runKubediff(
    watchArgs(
      ns,
      [...pluralOf.values()].map((plural) => `${plural}.monitoring.coreos.com`),
    ),
    { checkEvents: true, timeoutMs: 60_000 },
  );
  await kd.waitForStderr(WATCHING);
  // kubediff's silent baseline: the objects as served now (nothing is written meanwhile).
  const start = new Map<string, JsonObject>();
  for (const [uid, example] of objects) {
    const now = normalized(await admin.get(pathOf(example)));
    start.set(uid, now);
    serving.set(uid, now);
  }

  /** Per release: the objects it changed without a write, and where its events begin in kubediff's stream. */
  const phases: { version: string; from: number; withoutWrite: Set<string> }[] = [];
  const expectedWrites = new Set<string>();
  for (const [index, release] of releases.entries()) {
    if (index === 0) continue;
    const previous = new Map(releases[index - 1]!.crds.map((crd) => [crdOf(crd).metadata.name, crd]));
    const phase = { version: release.version, from: kd.events.length, withoutWrite: new Set<string>() };
    phases.push(phase);

    // The upgrade's CRDs. Those whose spec changed get new storage; wait until the old one is retired.
    const changed = release.crds.filter((crd) => {
      const before = previous.get(crdOf(crd).metadata.name);
      return before !== undefined && !jsonEqual(before.spec, crd.spec);
    });
    const retired = await Promise.all(
      changed.map((crd) =>
        storageRetirement(
          `/apis/${crdOf(crd).spec.group}/${crdOf(crd).spec.versions[0]!.name}/namespaces/${ns}/${crdOf(crd).spec.names.plural}`,
        ),
      ),
    );
    const appliedAt = Date.now();
    await applyCRDs(release.crds);
    const appliedIn = Date.now() - appliedAt;
    await Promise.all(retired.map((wait) => wait()));
    t.diagnostic(
      `${release.version}: ${changed.length} of ${release.crds.length} CRDs changed, applied in ${appliedIn} ms; old storage retired ${Date.now() - appliedAt} ms after the apply began`,
    );

    // What the API server serves now: every object it serves differently was changed without a write.
    for (const [uid, example] of objects) {
      const now = normalized(await admin.get(pathOf(example)));
      if (!jsonEqual(now, serving.get(uid)!)) phase.withoutWrite.add(uid);
      serving.set(uid, now);
    }
    // None missed: each is reported (before any write to it, so that the write reports only itself).
    const reportedAt = Date.now();
    for (const uid of phase.withoutWrite) {
      await kd.waitForEvent((event) => event.object.uid === uid && event.cause !== undefined, {
        description: `${release.version}: the change without a write of ${objects.get(uid)?.kind} ${uid}`,
        since: phase.from,
      });
    }
    t.diagnostic(
      `${release.version}: ${phase.withoutWrite.size} objects served differently without a write, reported ${Date.now() - reportedAt} ms after the GETs`,
    );

    // Then the objects are updated: the release's examples applied again, and a label on each (a write
    // that changes something; within a type, its event comes after every earlier one).
    const writes: KubeObject[] = [];
    for (const example of release.examples) {
      if (!pluralOf.has(String(example.kind))) continue;
      writes.push(await apply(pathOf(example), example));
    }
    for (const example of objects.values()) {
      writes.push(
        await admin.patch(pathOf(example), { metadata: { labels: { [RELEASE_LABEL]: release.version } } }),
      );
    }
    for (const response of writes) {
      const uid = response.metadata.uid;
      const now = normalized(response);
      // A write that changed nothing kubediff reports (the same manifest again) is not an event.
      if (jsonEqual(now, serving.get(uid)!)) continue;
      const id = `${uid}:${response.metadata.resourceVersion}`;
      written.set(id, now);
      expectedWrites.add(id);
      serving.set(uid, now);
    }
    for (const id of expectedWrites) {
      await kd.waitForEvent((event) => event.id === id, { description: `the write ${id}` });
    }
  }

  // The property, over the whole stream.
  const ours = kd.events.filter((event) => event.object.namespace === ns);
  const listing = () => ours.map((event, index) => `  #${index} ${describeEvent(event)}`).join('\n');
  const replay = new Map(start);
  const seenWithoutWrite = new Set<string>();
  for (const [index, event] of ours.entries()) {
    const where = `#${index} ${describeEvent(event)}\n${listing()}`;
    assert.equal(event.type, 'UPDATED', `only updates: nothing was created or deleted\n${where}`);
    const uid = event.object.uid;
    const before = replay.get(uid);
    assert.ok(before, `an event for an object of nobody's\n${where}`);
    let after: JsonObject;
    try {
      after = applyChanges(before, event.changes ?? []) as JsonObject;
    } catch (error) {
      assert.fail(`${String(error)}\n${where}`);
    }
    replay.set(uid, after);
    if (event.cause !== undefined) {
      const position = kd.events.indexOf(event);
      const phase = phases.findLast((p) => p.from <= position);
      if (!phase?.withoutWrite.has(uid))
        assert.fail(`a change without a write where there was none\n${where}`);
      const key = `${phase.version}:${uid}`;
      assert.ok(!seenWithoutWrite.has(key), `reported twice\n${where}`);
      seenWithoutWrite.add(key);
      assert.equal(event.cause, 'schema', where);
      continue;
    }
    const expected = written.get(event.id);
    assert.ok(expected, `an event for no write of the test (extra)\n${where}`);
    assert.deepEqual(after, expected, `the patch does not give the API server's version\n${where}`);
    expectedWrites.delete(event.id);
  }
  assert.deepEqual([...expectedWrites], [], `writes never reported\n${listing()}`);
  for (const phase of phases) {
    for (const uid of phase.withoutWrite) {
      assert.ok(seenWithoutWrite.has(`${phase.version}:${uid}`), `${phase.version}: ${uid} never reported`);
    }
  }
  // Where the stream leaves each object is where the API server has it.
  for (const [uid, example] of objects) {
    assert.deepEqual(replay.get(uid), normalized(await admin.get(pathOf(example))), `${uid} at the end`);
  }
  const withoutWrite = phases.reduce((sum, phase) => sum + phase.withoutWrite.size, 0);
  t.diagnostic(
    `${ours.length} events, ${withoutWrite} of them changes without a write, over ${objects.size} objects`,
  );
  // The upgrade that gave spec.shards a default changed the Prometheus objects that set none.
  assert.ok(withoutWrite > 0, 'the upgrade changed some object without a write');
});
