// The UI's HTTP API parameters: read from the query string, checked, and bounded. A bad value is a 400
// with one sentence naming the parameter, what it got and what it takes.
import { EVENT_TYPES, type EventType } from '../events/event.ts';
import type { HistoryFilter, ObjectRef, RowKey } from '../state/timeline-reader.ts';
import { isoTimestamp } from '../util/timestamp.ts';

/** Documented in docs/ui.md ("Limits"). */
export const LIMITS = {
  pageDefault: 100,
  pageMax: 500,
  bucketsDefault: 200,
  bucketsMax: 1_000,
  /** At most this many single marks; beyond, the timeline is drawn as density. */
  marks: 2_000,
  rowsDefault: 50,
  rowsMax: 200,
  objectEventsDefault: 500,
  objectEventsMax: 1_000,
  /** Values of one list filter (namespaces, kinds, …). */
  listValues: 50,
  /** Characters of one text filter or value. */
  text: 256,
  /** Characters of a request's URL. */
  url: 4_096,
} as const;

export class BadRequest extends Error {}

function text(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name);
  if (value === null || value.trim() === '') return undefined;
  if (value.length > LIMITS.text) {
    throw new BadRequest(`${name} is ${value.length} characters long; at most ${LIMITS.text} are allowed.`);
  }
  return value.trim();
}

function list(params: URLSearchParams, name: string): string[] | undefined {
  const values = params
    .getAll(name)
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value !== '');
  if (values.length === 0) return undefined;
  if (values.length > LIMITS.listValues) {
    throw new BadRequest(`${name} has ${values.length} values; at most ${LIMITS.listValues} are allowed.`);
  }
  for (const value of values) {
    if (value.length > LIMITS.text)
      throw new BadRequest(`a value of ${name} is longer than ${LIMITS.text} characters.`);
  }
  return values;
}

/** An ISO 8601 time (kept as the canonical ISO string, which sorts like the stored times). */
export function time(params: URLSearchParams, name: string): string | undefined {
  const value = text(params, name);
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) {
    throw new BadRequest(`${name} "${value}" is not a time: use ISO 8601, e.g. 2026-11-22T10:31:07Z.`);
  }
  return isoTimestamp(ms);
}

/** A whole number within bounds; `fallback` when the parameter is absent (undefined without one). */
export function integer(
  params: URLSearchParams,
  name: string,
  bounds: { min: number; max: number; fallback: number },
): number;
export function integer(
  params: URLSearchParams,
  name: string,
  bounds: { min: number; max: number },
): number | undefined;
export function integer(
  params: URLSearchParams,
  name: string,
  bounds: { min: number; max: number; fallback?: number },
): number | undefined {
  const value = text(params, name);
  if (value === undefined) return bounds.fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < bounds.min || number > bounds.max) {
    throw new BadRequest(`${name} "${value}" must be a whole number from ${bounds.min} to ${bounds.max}.`);
  }
  return number;
}

export function historyFilter(params: URLSearchParams): HistoryFilter {
  const types = list(params, 'type')?.map((value) => value.toUpperCase());
  for (const type of types ?? []) {
    if (!EVENT_TYPES.includes(type as EventType))
      throw new BadRequest(`type "${type}" is not an event type: use ADDED, UPDATED or DELETED.`);
  }
  return {
    from: time(params, 'from'),
    to: time(params, 'to'),
    clusters: list(params, 'cluster'),
    namespaces: list(params, 'namespace'),
    resources: list(params, 'kind'),
    types: types as EventType[] | undefined,
    name: text(params, 'name'),
    manager: text(params, 'manager'),
    user: text(params, 'user'),
    path: text(params, 'path'),
    search: text(params, 'q'),
  };
}

export function rowKey(params: URLSearchParams): RowKey {
  const rows = text(params, 'rows') ?? 'namespace';
  if (rows !== 'namespace' && rows !== 'kind')
    throw new BadRequest(`rows "${rows}" must be namespace or kind.`);
  return rows;
}

export function objectRef(params: URLSearchParams): ObjectRef {
  const resource = text(params, 'kind');
  const name = text(params, 'name');
  if (!resource || !name)
    throw new BadRequest('an object needs kind (e.g. deployments.apps) and name (and namespace).');
  return { resource, name, namespace: text(params, 'namespace'), cluster: text(params, 'cluster') };
}
