// `kubediff history --state <file> [-n ns] [resource[/name]] [--since 2h] [--tail n] [--manager glob]
// [--user glob] [-o json|pretty]`:
// the events recorded in a state file, newest last. Reads the file without writing it, so it can run
// while `kubediff watch` is writing it (WAL: readers never block the writer).
import { existsSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { loadConfigFile } from '../config/file.ts';
import { managerNameProblem } from '../events/filter.ts';
import { parseResourceName, resolveResourceName } from '../kube/resource-names.ts';
import { prettyRenderer } from '../sinks/pretty.ts';
import { type HistoryQuery, StateDatabase } from '../state/database.ts';
import { AGE_RULES, parseDurationSetting } from '../util/duration.ts';
import { UsageError } from '../util/errors.ts';

export interface HistoryFlags {
  state?: string;
  /** -c: take the state file from the config file's `state.path`. */
  config?: string;
  namespace?: string;
  /** Only changes made by this user (a glob), as the audit webhook named them. */
  user?: string;
  since?: string;
  tail?: string;
  /** Only events made by a field manager matching this glob (kubectl-*). */
  manager?: string;
  output?: 'json' | 'pretty';
}

export function runHistory(
  target: string | undefined,
  flags: HistoryFlags,
  io: { stdout: Writable; isTTY: boolean; now?: () => number },
): void {
  const path =
    flags.state?.trim() ||
    (flags.config
      ? loadConfigFile(flags.config, process.env, { unsetVariables: 'warn' }).config.state?.path
      : undefined);
  if (!path) {
    throw new UsageError(
      'history needs --state <file> (or -c with a config file that sets state.path): the file `kubediff watch --state` writes.',
    );
  }
  if (!existsSync(path)) {
    throw new UsageError(
      `no state file at ${path}: run \`kubediff watch --state ${path}\` first, or pass the path it writes.`,
    );
  }
  const query: HistoryQuery = {};
  if (flags.namespace) query.namespace = flags.namespace.trim();
  if (flags.user !== undefined) {
    const user = flags.user.trim();
    if (!user) throw new UsageError('--user is empty: name a user such as alice@example.com, or a glob.');
    query.user = user;
  }
  if (flags.since !== undefined) {
    const age = parseDurationSetting('--since', flags.since, AGE_RULES);
    query.since = new Date((io.now ?? Date.now)() - age).toISOString();
  }
  if (flags.tail !== undefined) {
    const tail = Number(flags.tail);
    if (!Number.isInteger(tail) || tail < 1)
      throw new UsageError(`invalid --tail "${flags.tail}": use a whole number of events such as 50.`);
    query.limit = tail;
  }
  if (flags.manager !== undefined) {
    const problem = managerNameProblem(flags.manager);
    if (problem) throw new UsageError(`invalid --manager ${JSON.stringify(flags.manager)}: ${problem}.`);
    query.manager = flags.manager.trim();
  }
  const db = StateDatabase.open(path, { readOnly: true });
  try {
    if (target !== undefined) {
      const slash = target.indexOf('/');
      const typed = slash < 0 ? target : target.slice(0, slash);
      const name = slash < 0 ? undefined : target.slice(slash + 1);
      if (!typed || name === '') {
        throw new UsageError(`invalid resource "${target}": use a type (deploy) or type/name (deploy/web).`);
      }
      query.resource = resolveRecorded(db, typed);
      if (name !== undefined) query.name = name;
    }
    const events = db.history(query);
    const format = flags.output ?? (io.isTTY ? 'pretty' : 'json');
    const render =
      format === 'pretty'
        ? prettyRenderer({ color: io.isTTY && !process.env.NO_COLOR })
        : (event: unknown) => `${JSON.stringify(event)}\n`;
    for (const event of events) {
      const text = render(event as Parameters<typeof render>[0]);
      io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
    }
  } finally {
    db.close();
  }
}

/** `deploy`, `deployments`, `deployments.apps`, `widgets.example.com` → the recorded qualified name. */
function resolveRecorded(db: StateDatabase, typed: string): string {
  const name = parseResourceName(typed);
  const types = db.resources().map((entry) => entry.type);
  const [match] = resolveResourceName(name, types);
  if (match) return match.group === '' ? match.resource : `${match.resource}.${match.group}`;
  // A type no longer served (its CRD is gone) is still in the history under its qualified name.
  const recorded = db.historyResources();
  const qualified = name.group === undefined ? name.name : `${name.name}.${name.group}`;
  const found =
    recorded.find((resource) => resource === qualified) ??
    (name.group === undefined
      ? recorded.find((resource) => resource.split('.')[0] === name.name)
      : undefined);
  if (found) return found;
  throw new UsageError(
    `unknown resource type "${typed}": the state file ${db.path} records no such type; use a name such as deployments or widgets.example.com.`,
  );
}
