// Which recorded events a `kubediff history` query selects in the state file (SQLite): its filters as
// the conditions of a WHERE clause on the events table, with their parameters. Names and times use the
// table's columns; managers, users and clusters the stored event's JSON (no column of their own, so the
// schema stays as it is). Globs use SQLite's GLOB, whose * and ? are the shell's.
import type { HistoryQuery } from './store.ts';

/**
 * The condition of HistoryQuery.manager on the stored event JSON (SQLite's json_each), with its two
 * parameters: the glob in SQLite's GLOB syntax, where `[` opens a class and is escaped as `[[]`.
 */
const MANAGER_CONDITION =
  "(EXISTS (SELECT 1 FROM json_each(event, '$.by.managers') WHERE json_extract(value, '$.manager') GLOB ?)" +
  " OR EXISTS (SELECT 1 FROM json_each(event, '$.changes') WHERE json_extract(value, '$.manager') GLOB ?))";

function sqliteGlob(glob: string): string {
  return glob.replaceAll('[', '[[]');
}

/** The conditions (to be joined with AND) and their parameters, in order. */
export function historyConditions(query: HistoryQuery): { where: string[]; params: (string | number)[] } {
  const conditions: [string, string | undefined][] = [
    ['namespace = ?', query.namespace],
    ['resource = ?', query.resource],
    ['name = ?', query.name],
    ['time >= ?', query.since],
  ];
  const given = conditions.filter((condition): condition is [string, string] => condition[1] !== undefined);
  const where = given.map(([clause]) => clause);
  const params: (string | number)[] = given.map(([, value]) => value);
  if (query.manager !== undefined) {
    where.push(MANAGER_CONDITION);
    params.push(sqliteGlob(query.manager), sqliteGlob(query.manager));
  }
  if (query.user !== undefined) {
    // From the event's JSON (no column: the schema stays as it is).
    const glob = sqliteGlob(query.user);
    where.push(
      "(json_extract(event, '$.by.user.username') GLOB ? OR json_extract(event, '$.by.impersonatedUser.username') GLOB ?)",
    );
    params.push(glob, glob);
  }
  if (query.outcome !== undefined) {
    // An OUTCOME's verdict, from its JSON (no column of its own).
    where.push("type = 'OUTCOME' AND json_extract(event, '$.verdict') = ?");
    params.push(query.outcome);
  }
  if (query.clusters && query.clusters.length > 0) {
    // SQLite's GLOB has the shell's * and ? (the history's --cluster globs).
    where.push(
      `(${query.clusters.map(() => "coalesce(json_extract(event, '$.cluster'), '') GLOB ?").join(' OR ')})`,
    );
    params.push(...query.clusters);
  }
  return { where, params };
}
