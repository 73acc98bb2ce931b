// The history `show`, `diff` and `blame` are tested on: a Deployment edited a dozen times by three
// identities (image, replicas, env, labels), each edit with a field manager of its own, each awaited in
// the watch's output before the next. What the API server answered to each edit is kept, normalized the
// way kubediff records objects by default (managedFields, resourceVersion, generation and status
// dropped), so that a test compares what the commands print with what the server said at that time.
import type { JsonObject } from '../../src/kube/types.ts';
import type { KubediffProcess } from './cli.ts';
import type { TestEvent } from './events.ts';
import type { KubeAdmin, KubeObject } from './kube-admin.ts';

export interface Editor {
  client: KubeAdmin;
  /** The fieldManager of its writes. */
  manager: string;
}

/** One edit: which of the three editors, and its patch (strategic merge: lists merged by name). */
interface Edit {
  editor: 0 | 1 | 2;
  patch: JsonObject;
}

const container = (fields: JsonObject) => ({
  spec: { template: { spec: { containers: [{ name: 'web', ...fields }] } } },
});

/** Twelve edits, each editor in turn: image, replicas, env, labels. */
export const EDITS: readonly Edit[] = [
  { editor: 0, patch: container({ image: 'registry.local/web:2' }) },
  { editor: 1, patch: { spec: { replicas: 3 } } },
  { editor: 2, patch: container({ env: [{ name: 'MODE', value: 'a' }] }) },
  { editor: 0, patch: { metadata: { labels: { tier: 'front' } } } },
  { editor: 1, patch: { spec: { replicas: 5 } } },
  { editor: 2, patch: container({ env: [{ name: 'MODE', value: 'b' }] }) },
  { editor: 0, patch: container({ image: 'registry.local/web:3' }) },
  { editor: 1, patch: { metadata: { labels: { team: 'shop' } } } },
  { editor: 2, patch: container({ env: [{ name: 'DEBUG', value: '1' }] }) },
  { editor: 0, patch: { spec: { replicas: 2 } } },
  { editor: 1, patch: { metadata: { labels: { tier: null } } } },
  { editor: 2, patch: container({ image: 'registry.local/web:4' }) },
];

/** The Deployment before the edits. */
export function webDeployment(name: string): JsonObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels: { app: name } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'web', image: 'registry.local/web:1' }] },
      },
    },
  };
}

/** An object as kubediff records it by default. */
export function recordedForm(object: KubeObject | JsonObject): JsonObject {
  const copy = structuredClone(object) as JsonObject & { metadata: JsonObject };
  delete copy.metadata.managedFields;
  delete copy.metadata.resourceVersion;
  delete copy.metadata.generation;
  delete copy.status;
  return copy;
}

export interface RecordedEdit {
  /** Which editor made it. */
  editor: number;
  /** The server's answer, as kubediff records it. */
  object: JsonObject;
  /** The watch's event for it. */
  event: TestEvent;
}

/** Applies EDITS to the Deployment `name`, each awaited in `watch`'s output; what each one made. */
export async function editDeployment(
  editors: readonly [Editor, Editor, Editor],
  namespace: string,
  name: string,
  watch: KubediffProcess,
): Promise<RecordedEdit[]> {
  const recorded: RecordedEdit[] = [];
  for (const edit of EDITS) {
    const editor = editors[edit.editor];
    const answer = await editor.client.send<KubeObject>(
      'PATCH',
      `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`,
      {
        query: { fieldManager: editor.manager },
        body: edit.patch,
        contentType: 'application/strategic-merge-patch+json',
      },
    );
    const resourceVersion = answer.metadata.resourceVersion;
    const event = await watch.waitForEvent(
      (candidate) =>
        candidate.type === 'UPDATED' &&
        candidate.object.name === name &&
        candidate.object.resourceVersion === resourceVersion,
      { description: `the UPDATED of ${name} at resourceVersion ${resourceVersion}` },
    );
    recorded.push({ editor: edit.editor, object: recordedForm(answer), event });
  }
  return recorded;
}

/** A time strictly between two events' times (ISO). */
export function between(earlier: TestEvent, later: TestEvent): string {
  return new Date((Date.parse(earlier.time) + Date.parse(later.time)) / 2).toISOString();
}
