// Where `show`, `diff` and `blame` read: the --state file or database (or the config file's state.path),
// through the UI's reader (src/state/timeline-reader.ts: the same queries, filters and bounds), and the
// names people type resolved the kubectl way: `deploy/web`, `deployments.apps/web`, `-n shop` (default:
// the namespace `default`, as kubectl's), `--cluster` for a PostgreSQL history of several.
//
// The store is opened once, read-only, and the reader runs on it in this process: a command has no
// event loop to keep free (the UI runs the SQLite reader in a worker thread for that), and opening an
// SQLite file checks it whole (PRAGMA quick_check: over a second for a million events), so once is the
// least it costs.
import type { OutcomeEvent, Verdict } from '../../events/event.ts';
import type { ResourceType } from '../../kube/types.ts';
import { openHistory } from '../../state/open.ts';
import { SqliteStateStore } from '../../state/sqlite-store.ts';
import { SqliteTimelineReader } from '../../state/sqlite-timeline-reader.ts';
import type { HistoryReader } from '../../state/store.ts';
import type { ObjectRef, TimelineReader } from '../../state/timeline-reader.ts';
import { KubediffError, UsageError } from '../../util/errors.ts';
import { type RecordedType, resolveRecordedType } from '../recorded-type.ts';
import { requireStateFile, stateLocation } from '../state-location.ts';
import { describeRef, ObjectTimeline } from './object-timeline.ts';

export interface HistorySourceFlags {
  state?: string;
  config?: string;
  /** The cluster of a PostgreSQL history (its events' `cluster`). */
  cluster?: string;
  namespace?: string;
}

/** The namespace kubectl uses when none is named. */
const DEFAULT_NAMESPACE = 'default';

export class HistorySource {
  readonly label: string;
  readonly reader: TimelineReader;
  private readonly db: HistoryReader;
  private readonly flags: HistorySourceFlags;

  private constructor(db: HistoryReader, reader: TimelineReader, flags: HistorySourceFlags) {
    this.db = db;
    this.reader = reader;
    this.flags = flags;
    this.label = db.label;
  }

  /** Opens the history named by --state or -c, read-only. */
  static async open(flags: HistorySourceFlags, command: string): Promise<HistorySource> {
    const location = stateLocation(
      flags,
      `${command} needs --state <file|postgres://…> (or -c with a config file that sets state.path): the history \`kubediff watch --state\` records.`,
    );
    requireStateFile(location.path);
    if (flags.cluster !== undefined && flags.cluster.trim() === '')
      throw new UsageError('invalid --cluster "": name a cluster, as `kubediff history` shows it.');
    const db = await openHistory(location);
    if (db instanceof SqliteStateStore) {
      return new HistorySource(db, new SqliteTimelineReader(db.database), flags);
    }
    const { PostgresHistory } = await import('../../state/postgres-history.ts');
    const { PostgresTimelineReader } = await import('../../state/postgres-timeline-reader.ts');
    if (!(db instanceof PostgresHistory)) throw new Error('a history of an unknown store');
    return new HistorySource(db, new PostgresTimelineReader(db), flags);
  }

  /** Closes the store (the reader's close closes the store it reads). */
  async close(): Promise<void> {
    await this.reader.close();
  }

  /** The cluster asked for with --cluster. */
  get cluster(): string | undefined {
    return this.flags.cluster?.trim() || undefined;
  }

  /** The namespace asked for with -n. */
  get namespace(): string | undefined {
    return this.flags.namespace?.trim() || undefined;
  }

  /** The types the history recorded, with their discovery (kind, group, scope). */
  recordedTypes(): Promise<ResourceType[]> {
    return this.db.recordedTypes();
  }

  /**
   * The OUTCOMEs recorded for `ref` with one of `verdicts`, oldest first (docs/outcomes.md): read a verdict
   * at a time, by the history's own filter.
   */
  async outcomes(ref: ObjectRef, verdicts: readonly Verdict[]): Promise<OutcomeEvent[]> {
    const found: OutcomeEvent[] = [];
    for (const outcome of verdicts) {
      let after: string | undefined;
      do {
        const page = await this.db.history({
          resource: ref.resource,
          name: ref.name,
          outcome,
          ...(ref.namespace !== undefined ? { namespace: ref.namespace } : {}),
          ...(ref.cluster !== undefined ? { clusters: [ref.cluster] } : {}),
          ...(after !== undefined ? { after } : {}),
        });
        for (const event of page.events) if (event.type === 'OUTCOME') found.push(event);
        after = page.next;
      } while (after !== undefined);
    }
    return found.sort((a, b) => a.time.localeCompare(b.time));
  }

  /** A kubectl type name (`deploy`) → the recorded type. */
  resolveType(typed: string): Promise<RecordedType> {
    return resolveRecordedType(this.db, typed);
  }

  /** `type/name` → the object as the history names it. */
  async objectRef(text: string): Promise<ObjectRef> {
    const slash = text.indexOf('/');
    const typed = text.slice(0, slash).trim();
    const name = text.slice(slash + 1).trim();
    if (slash < 0 || !typed || !name || name.includes('/')) {
      throw new UsageError(
        `invalid object "${text}": name one as type/name, the kubectl way: deploy/web, deployments.apps/web.`,
      );
    }
    const type = await this.resolveType(typed);
    const namespace = await this.namespaceOf(type, name);
    return {
      resource: type.resource,
      name,
      ...(namespace !== undefined ? { namespace } : {}),
      ...(this.cluster !== undefined ? { cluster: this.cluster } : {}),
    };
  }

  /** The object's history; a KubediffError, with where it is recorded when elsewhere, when it has none. */
  async timeline(text: string): Promise<ObjectTimeline> {
    const ref = await this.objectRef(text);
    const timeline = await ObjectTimeline.read(this.reader, ref);
    if (timeline.events.length === 0) throw await this.notFound(ref);
    return timeline;
  }

  private async namespaceOf(type: RecordedType, name: string): Promise<string | undefined> {
    const given = this.flags.namespace?.trim();
    if (type.namespaced === false) return undefined;
    if (given) return given;
    if (type.namespaced === true) return DEFAULT_NAMESPACE;
    // A type known only from its events: namespaced when its events have a namespace.
    const { events } = await this.db.history({ resource: type.resource, name, limit: 1 });
    return events[0] && events[0].object.namespace === undefined ? undefined : DEFAULT_NAMESPACE;
  }

  private async notFound(ref: ObjectRef): Promise<KubediffError> {
    const { events } = await this.db.history({
      resource: ref.resource,
      name: ref.name,
      limit: 20,
      ...(ref.cluster !== undefined ? { clusters: [ref.cluster] } : {}),
    });
    const namespaces = [...new Set(events.flatMap((event) => event.object.namespace ?? []))];
    const hint =
      ref.namespace !== undefined && namespaces.length > 0
        ? `it is recorded in namespace ${namespaces.join(', ')}: add -n ${namespaces[0]}`
        : `\`kubediff history ${ref.resource}\` lists what is recorded`;
    return new KubediffError(`${this.label} has no history of ${describeRef(ref)}; ${hint}.`);
  }
}
