// `kubediff history --state <file|postgres://…> [--cluster glob] [-n ns] [resource[/name]] [--since 2h]
// [--tail n] [--manager glob] [--user glob] [--outcome verdict] [-o json|pretty]`: the events (changes and
// OUTCOMEs) recorded, newest last, read page
// by page. Reads without writing, so it can run while `kubediff watch` writes (SQLite's WAL: readers never
// block the writer; PostgreSQL: MVCC).
import type { Writable } from 'node:stream';
import type { Verdict } from '../events/event.ts';
import { managerNameProblem } from '../kube/managed-fields.ts';
import { prettyRenderer } from '../sinks/core/pretty.ts';
import { openHistory } from '../state/open.ts';
import type { HistoryQuery } from '../state/store.ts';
import { parseCount } from '../util/count.ts';
import { AGE_RULES, parseDurationSetting } from '../util/duration.ts';
import { UsageError } from '../util/errors.ts';
import { isoTimestamp } from '../util/timestamp.ts';
import { resolveRecordedType } from './recorded-type.ts';
import { requireStateFile, stateLocation } from './state-location.ts';

export interface HistoryFlags {
  state?: string;
  /** -c: take the state file from the config file's `state.path`. */
  config?: string;
  namespace?: string;
  /** Only changes made by this user (a glob), as the audit webhook named them. */
  user?: string;
  /** Cluster names or globs (repeatable). */
  cluster?: string[];
  since?: string;
  tail?: string;
  /** Only events made by a field manager matching this glob (kubectl-*). */
  manager?: string;
  /** Only OUTCOMEs with this verdict (docs/outcomes.md); commander checked it is one. */
  outcome?: Verdict;
  output?: 'json' | 'pretty';
}

export async function runHistory(
  target: string | undefined,
  flags: HistoryFlags,
  io: { stdout: Writable; isTTY: boolean; now?: () => number },
): Promise<void> {
  const location = stateLocation(
    flags,
    'history needs --state <file> (or -c with a config file that sets state.path): the file `kubediff watch --state` writes.',
  );
  requireStateFile(location.path);
  const query: HistoryQuery = {};
  if (flags.namespace) query.namespace = flags.namespace.trim();
  if (flags.user !== undefined) {
    const user = flags.user.trim();
    if (!user) throw new UsageError('--user is empty: name a user such as alice@example.com, or a glob.');
    query.user = user;
  }
  const clusters = (flags.cluster ?? []).flatMap((value) => value.split(',')).map((value) => value.trim());
  if (clusters.some((cluster) => cluster === ''))
    throw new UsageError('invalid --cluster "": name a cluster, or a glob such as prod-*.');
  if (clusters.length > 0) query.clusters = clusters;
  if (flags.since !== undefined) {
    const age = parseDurationSetting('--since', flags.since, AGE_RULES);
    query.since = isoTimestamp((io.now ?? Date.now)() - age);
  }
  if (flags.tail !== undefined)
    query.limit = parseCount('--tail', flags.tail, 'use a whole number of events such as 50');
  if (flags.manager !== undefined) {
    const problem = managerNameProblem(flags.manager);
    if (problem) throw new UsageError(`invalid --manager ${JSON.stringify(flags.manager)}: ${problem}.`);
    query.manager = flags.manager.trim();
  }
  if (flags.outcome !== undefined) query.outcome = flags.outcome;
  const db = await openHistory(location);
  try {
    if (target !== undefined) {
      const slash = target.indexOf('/');
      const typed = slash < 0 ? target : target.slice(0, slash);
      const name = slash < 0 ? undefined : target.slice(slash + 1);
      if (!typed || name === '') {
        throw new UsageError(`invalid resource "${target}": use a type (deploy) or type/name (deploy/web).`);
      }
      query.resource = (await resolveRecordedType(db, typed)).resource;
      if (name !== undefined) query.name = name;
    }
    const format = flags.output ?? (io.isTTY ? 'pretty' : 'json');
    const render =
      format === 'pretty'
        ? prettyRenderer({ color: io.isTTY && !process.env.NO_COLOR })
        : (event: unknown) => `${JSON.stringify(event)}\n`;
    // Page by page: a history of millions of events is never held in memory at once.
    let after: string | undefined;
    do {
      const page = await db.history({ ...query, ...(after !== undefined ? { after } : {}) });
      for (const event of page.events) {
        const text = render(event as Parameters<typeof render>[0]);
        if (!io.stdout.write(text.endsWith('\n') ? text : `${text}\n`))
          await new Promise((resolve) => io.stdout.once('drain', resolve));
      }
      after = page.next;
    } while (after !== undefined);
  } finally {
    await db.close();
  }
}
