// The last reported state of every object of one informer, keyed by
// namespace/name. It holds objects already normalized (ignored paths
// removed, Secrets redacted), which is both what the next diff compares
// against and the least memory per object.
import type { ManagersSignature } from '../kube/managed-fields.ts';
import type { JsonObject } from '../kube/types.ts';

export interface StoredObject {
  key: string;
  namespace: string | undefined;
  name: string;
  uid: string;
  resourceVersion: string;
  /** The normalized object: what was last reported. */
  object: JsonObject;
  /**
   * A signature of its managedFields entries (not the entries: they would double the memory), so that the
   * next version can tell whose entries changed; undefined when it had none or was loaded from --state.
   */
  managers?: ManagersSignature | undefined;
}

export class ObjectStore {
  private readonly objects = new Map<string, StoredObject>();

  get(key: string): StoredObject | undefined {
    return this.objects.get(key);
  }

  set(entry: StoredObject): void {
    this.objects.set(entry.key, entry);
  }

  delete(key: string): void {
    this.objects.delete(key);
  }

  keys(): IterableIterator<string> {
    return this.objects.keys();
  }

  values(): IterableIterator<StoredObject> {
    return this.objects.values();
  }

  get size(): number {
    return this.objects.size;
  }
}
