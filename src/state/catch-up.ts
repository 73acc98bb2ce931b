// Start-up from a previous run's state, so that each informer reports exactly what changed offline: a type
// listed before starts pre-loaded and takes its first LIST as a relist; one watched but never wholly
// listed reconciles its recorded objects and baselines the rest silently; a type newly served reports its
// objects ADDED, one newly selected baselines silently, one no longer served reports its objects DELETED
// (reportVanishedTypes). A state recorded with another selection is not compared (a new silent baseline).
import type { Informer, InformerHandler, InitialListMode } from '../informer/informer.ts';
import type { StoredObject } from '../informer/store.ts';
import type { Selection } from '../kube/selection.ts';
import { numericResourceVersion, qualifiedName, type ResourceType } from '../kube/types.ts';
import type { Logger } from '../util/log.ts';
import { replayPointOf } from './followed-points.ts';
import type { StateStore } from './store.ts';

/** The meta key of the selection signature the recorded objects were taken with. */
export const SIGNATURE_KEY = 'selection';

/**
 * The meta key that says the types' resourceVersions are how far they are followed (followed-versions.ts):
 * a kubediff before the replay wrote where their first LIST ended there, which is no replay point.
 */
export const FOLLOWED_KEY = 'followed';

/** What an informer starts with. */
export interface InformerPlan {
  initialList: InitialListMode;
  /** The recorded objects: the first LIST is reconciled against them (catch-up). */
  preload?: StoredObject[];
  /** The recorded objects are part of a first LIST never wholly committed (see InformerOptions). */
  preloadPartial?: true;
  /**
   * How far the previous run followed the type (every change up to it committed): the changes after
   * it are replayed (ReflectorOptions.replayFrom), for objects created and deleted since.
   */
  replayFrom?: string;
}

/** A type as the previous run recorded it. */
interface RecordedType {
  watched: boolean;
  /** Its recorded objects were a complete inventory. */
  listed: boolean;
  /** Listed: how far it was followed ('' when not known). */
  followed: string;
  type: ResourceType;
}

export class CatchUp {
  private readonly log: Logger;
  private readonly previous: ReadonlyMap<string, RecordedType>;
  /**
   * The previous run's objects per watched type, read once at the start (the informers' stores are
   * pre-loaded from it synchronously) and released after the first sync.
   */
  private preloaded: Map<string, StoredObject[]> | undefined;

  private constructor(
    log: Logger,
    previous: ReadonlyMap<string, RecordedType>,
    preloaded: Map<string, StoredObject[]>,
  ) {
    this.log = log;
    this.previous = previous;
    this.preloaded = preloaded;
  }

  /**
   * Reads what the previous run recorded in `store` (its selection, types and objects). A state recorded
   * with another selection than `signature` is not compared: it is said, and (unless `readOnly`, a
   * standby) its objects are forgotten and the store takes this run's signature.
   */
  static async read(
    store: StateStore,
    options: { signature: string; log: Logger; readOnly: boolean },
  ): Promise<CatchUp> {
    const { log } = options;
    const recorded = await store.getMeta(SIGNATURE_KEY);
    const resources = await store.resources();
    let previous = new Map<string, RecordedType>();
    if (recorded !== undefined && recorded !== options.signature && resources.length > 0) {
      log.warn(
        `the state in ${store.label} was written with other namespaces, label selector, ignored paths or redaction; ` +
          'taking a new baseline instead of catching up (the history is kept).',
      );
      if (!options.readOnly) await store.forgetObjects();
    } else {
      previous = new Map(
        resources.map((entry) => [
          entry.resource,
          { watched: entry.watched, listed: entry.listed, followed: entry.resourceVersion, type: entry.type },
        ]),
      );
    }
    const preloaded = new Map<string, StoredObject[]>();
    for (const [resource, before] of previous)
      if (before.watched) preloaded.set(resource, await store.objects(resource));
    if (!options.readOnly) await store.setMeta(SIGNATURE_KEY, options.signature);
    if ((await store.getMeta(FOLLOWED_KEY)) !== '1') {
      // Written by a kubediff before the replay: no replay this time, and what this run writes is new.
      for (const before of previous.values()) before.followed = '';
      if (!options.readOnly) {
        await store.forgetFollowed();
        await store.setMeta(FOLLOWED_KEY, '1');
      }
    }
    return new CatchUp(log, previous, preloaded);
  }

  /** True when the store holds a previous run's state: startup is a catch-up, not a baseline. */
  get hasPreviousState(): boolean {
    return this.previous.size > 0;
  }

  /** Whether the previous run watched `resource` (its objects are recorded). */
  wasWatched(resource: string): boolean {
    return this.previous.get(resource)?.watched === true;
  }

  /** How an informer for `type` (in `namespace`) starts; `fallback` is what it would do without state. */
  plan(type: ResourceType, namespace: string | undefined, fallback: InitialListMode): InformerPlan {
    // A type appearing while running (fallback 'added-offline') is new whatever the store says.
    if (!this.hasPreviousState || !this.preloaded || fallback === 'added-offline')
      return { initialList: fallback };
    const resource = qualifiedName(type);
    const before = this.previous.get(resource);
    if (!before) return { initialList: 'added-offline' }; // not offered last time: created while down
    if (!before.watched) return { initialList: 'silent' }; // offered, but not watched: a new baseline
    const recorded = this.preloaded.get(resource) ?? [];
    const preload =
      namespace === undefined ? recorded : recorded.filter((object) => object.namespace === namespace);
    if (before.listed) {
      const replayFrom = replayPointOf(before.followed, namespace);
      return { initialList: 'silent', preload, ...(replayFrom ? { replayFrom } : {}) };
    }
    // Not listed: the previous run's first LIST was not wholly committed (killed between its
    // transactions, or some of it dropped while the store was down). What it recorded is compared; the
    // objects it did not record take a silent baseline, as a first start's would.
    if (preload.length === 0) return { initialList: 'silent' };
    return { initialList: 'silent', preload, preloadPartial: true };
  }

  /**
   * After the first sync: every object of a type recorded by the previous run that the server no longer
   * offers (a CRD deleted while kubediff was down) is reported DELETED offline, finalStateUnknown, at the
   * newest resourceVersion the `informers` have seen. Then the previous run's objects are released.
   */
  reportVanishedTypes(selection: Selection, handler: InformerHandler, informers: readonly Informer[]): void {
    const preloaded = this.preloaded;
    this.preloaded = undefined;
    if (!this.hasPreviousState || !preloaded) return;
    const served = new Set(
      [...selection.watched, ...selection.skipped.map((skipped) => skipped.type)].map(qualifiedName),
    );
    const resourceVersion = newestResourceVersion(informers);
    for (const [resource, before] of this.previous) {
      if (served.has(resource) || !before.watched) continue;
      const objects = preloaded.get(resource) ?? [];
      for (const object of objects) {
        handler.onDelete(before.type, object, {
          offline: true,
          finalStateUnknown: true,
          resourceVersion: resourceVersion ?? object.resourceVersion,
        });
      }
      if (objects.length > 0) {
        this.log.info(
          `${resource} is no longer served: reported its ${objects.length} recorded object(s) as deleted.`,
        );
      }
    }
  }
}

/** What the recorded objects depend on: with other values they cannot be compared (see CatchUp.read). */
export function selectionSignature(settings: {
  namespaces: readonly string[];
  excludeNamespaces: readonly string[];
  labelSelector: string | undefined;
  ignoredPaths: readonly string[];
  /**
   * What redaction the recorded objects went through: objects redacted otherwise would compare as changed,
   * or hold values in the clear that are redacted now (src/config/redaction.ts, redactionSignature).
   */
  redaction: string;
}): string {
  return JSON.stringify({
    namespaces: [...settings.namespaces].sort(),
    excludeNamespaces: [...settings.excludeNamespaces].sort(),
    labelSelector: settings.labelSelector ?? '',
    ignoredPaths: [...settings.ignoredPaths].sort(),
    redaction: settings.redaction,
  });
}

/** The newest resourceVersion any informer has seen (numeric when the server's are, as etcd's are). */
function newestResourceVersion(informers: readonly Informer[]): string | undefined {
  let best: bigint | undefined;
  for (const informer of informers) {
    const value = numericResourceVersion(informer.resourceVersion);
    if (value !== undefined && (best === undefined || value > best)) best = value;
  }
  return best?.toString();
}
