// The event as tests see it, plus small tools to find events and to check them against the contract
// (PRODUCT.md, "The event").

import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import { type ChangeEvent, type OutcomeEvent, VERDICTS } from '../../src/events/event.ts';
import { nonEmpty } from './non-empty.ts';

/**
 * One JSON line of `kubediff watch -o json` (and one webhook body). Mirrors the contract type of a
 * change; a line may also be an OUTCOME (docs/outcomes.md): outcomeOf() tells.
 */
export interface TestEvent extends ChangeEvent {}

/** The OUTCOME a line is, if it is one. */
export function outcomeOf(event: TestEvent | unknown): OutcomeEvent | undefined {
  return isRecord(event) && event.type === 'OUTCOME' ? (event as unknown as OutcomeEvent) : undefined;
}

/** The changes among what a watch printed, its OUTCOMEs left out (the timeline and the events table show changes). */
export function changesOf(events: readonly TestEvent[]): TestEvent[] {
  return events.filter((event) => !outcomeOf(event));
}

/** A predicate for `waitForEvent`: the OUTCOME of the change `followed` (an event id), or of `name`'s. */
export function outcomeFor(followed: {
  id?: string;
  name?: string;
  verdict?: OutcomeEvent['verdict'];
}): (event: TestEvent) => boolean {
  return (event) => {
    const outcome = outcomeOf(event);
    if (!outcome) return false;
    if (followed.id !== undefined && !outcome.follows.includes(followed.id)) return false;
    if (followed.name !== undefined && outcome.object.name !== followed.name) return false;
    return followed.verdict === undefined || outcome.verdict === followed.verdict;
  };
}

/** Overrides for `sampleEvent`; `object` is merged field by field. */
export interface SampleOverrides extends Partial<Omit<TestEvent, 'object'>> {
  object?: Partial<TestEvent['object']>;
}

/** A valid UPDATED event for unit tests: Deployment shop/web in cluster "prod", replicas 2 → 5. */
export function sampleEvent(overrides: SampleOverrides = {}): TestEvent {
  const { object, ...rest } = overrides;
  return {
    id: 'u1:5',
    type: 'UPDATED',
    time: '2026-11-22T10:31:07.412Z',
    cluster: 'prod',
    object: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      resource: 'deployments',
      namespace: 'shop',
      name: 'web',
      uid: 'u1',
      resourceVersion: '5',
      ...object,
    },
    changes: [{ op: 'replace', path: '/spec/replicas', from: 2, to: 5 }],
    ...rest,
  };
}

/** What `matching()` compares; every given field must be equal. */
export interface EventFilter {
  type?: TestEvent['type'];
  kind?: string;
  resource?: string;
  apiVersion?: string;
  /** `null` matches only cluster-scoped objects (no namespace). */
  namespace?: string | null;
  name?: string;
  uid?: string;
  offline?: boolean;
  finalStateUnknown?: boolean;
}

/** A predicate for `waitForEvent`/`expectNoEvent`, e.g. `matching({ type: 'UPDATED', kind: 'ConfigMap', name: 'a' })`. */
export function matching(filter: EventFilter): (event: TestEvent) => boolean {
  return (event) => {
    const object = event.object;
    if (filter.type !== undefined && event.type !== filter.type) return false;
    if (filter.kind !== undefined && object.kind !== filter.kind) return false;
    if (filter.resource !== undefined && object.resource !== filter.resource) return false;
    if (filter.apiVersion !== undefined && object.apiVersion !== filter.apiVersion) return false;
    if (filter.namespace !== undefined && (object.namespace ?? null) !== filter.namespace) return false;
    if (filter.name !== undefined && object.name !== filter.name) return false;
    if (filter.uid !== undefined && object.uid !== filter.uid) return false;
    if (filter.offline !== undefined && (event.offline === true) !== filter.offline) return false;
    if (
      filter.finalStateUnknown !== undefined &&
      (event.finalStateUnknown === true) !== filter.finalStateUnknown
    ) {
      return false;
    }
    return true;
  };
}

/** The change of an UPDATED event at `path`, if any. */
export function changeAt(
  event: TestEvent,
  path: string,
): NonNullable<TestEvent['changes']>[number] | undefined {
  return event.changes?.find((change) => change.path === path);
}

/** A one-line summary for failure messages: `UPDATED apps/v1 Deployment shop/web rv=48213 [2 changes]`. */
export function describeEvent(event: TestEvent): string {
  // Lines parsed from stdout are not guaranteed to be well-formed events.
  if (!isRecord(event.object)) return JSON.stringify(event);
  const object = event.object;
  const where = object.namespace === undefined ? object.name : `${object.namespace}/${object.name}`;
  const flags = [
    event.offline ? 'offline' : '',
    event.cause ? `cause ${event.cause}` : '',
    event.finalStateUnknown ? 'finalStateUnknown' : '',
  ]
    .filter(Boolean)
    .join(',');
  const changes =
    event.changes === undefined ? '' : ` [${event.changes.map((c) => `${c.op} ${c.path}`).join('; ')}]`;
  return `${event.type} ${object.apiVersion} ${object.kind} ${where} rv=${object.resourceVersion}${flags ? ` (${flags})` : ''}${changes}`;
}

const EVENT_KEYS = new Set([
  'id',
  'type',
  'time',
  'cluster',
  'object',
  'owner',
  'by',
  'changes',
  'offline',
  'cause',
  'finalStateUnknown',
  'usedBy',
  'rollsOut',
]);
const OBJECT_KEYS = new Set([
  'apiVersion',
  'kind',
  'resource',
  'namespace',
  'name',
  'uid',
  'resourceVersion',
]);
const CHANGE_KEYS = new Set(['op', 'path', 'from', 'to', 'manager']);
const BY_KEYS = new Set([
  'managers',
  'user',
  'impersonatedUser',
  'userAgent',
  'sourceIPs',
  'auditID',
  'reviewUID',
  'match',
]);
const MANAGER_KEYS = new Set(['manager', 'operation', 'subresource', 'time']);
const USED_BY_KEYS = new Set(['workloads', 'unreadKeys', 'incomplete']);
const WORKLOAD_KEYS = new Set(['object', 'via', 'keys', 'live', 'pods']);
const VIA_KEYS = new Set([
  'type',
  'key',
  'env',
  'prefix',
  'volume',
  'items',
  'container',
  'initContainer',
  'ephemeralContainer',
  'subPath',
  'optional',
  'serviceAccount',
]);
const VIA_TYPES = new Set(['env', 'envFrom', 'volume', 'projected', 'imagePullSecrets', 'serviceAccount']);
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
/** RFC 6901: '/'-separated tokens where '~' only appears as '~0' or '~1'. */
const JSON_POINTER = /^(\/([^~/]|~[01])*)+$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every way `value` breaks the event contract; empty when it is a valid event. */
export function contractViolations(value: unknown): string[] {
  const problems: string[] = [];
  if (!isRecord(value)) return ['the event is not a JSON object'];
  if (value.type === 'OUTCOME') return outcomeViolations(value);
  for (const key of Object.keys(value)) if (!EVENT_KEYS.has(key)) problems.push(`unknown field "${key}"`);

  const { type, object, changes } = value;
  if (type !== 'ADDED' && type !== 'UPDATED' && type !== 'DELETED')
    problems.push(`bad type ${JSON.stringify(type)}`);
  if (typeof value.time !== 'string' || !ISO_TIME.test(value.time) || Number.isNaN(Date.parse(value.time))) {
    problems.push(`time ${JSON.stringify(value.time)} is not an ISO 8601 UTC timestamp`);
  }
  if ('cluster' in value && (typeof value.cluster !== 'string' || value.cluster === '')) {
    problems.push('cluster, when present, must be a non-empty string');
  }
  for (const flag of ['offline', 'finalStateUnknown'] as const) {
    if (flag in value && value[flag] !== true) problems.push(`${flag}, when present, must be true`);
  }
  if (value.finalStateUnknown === true && (type !== 'DELETED' || value.offline !== true)) {
    problems.push('finalStateUnknown belongs only on an offline DELETED event');
  }
  if ('cause' in value) {
    if (value.cause !== 'schema' && value.cause !== 'relist') problems.push('cause must be schema or relist');
    if (type !== 'UPDATED' || value.offline !== true)
      problems.push('cause belongs only on an offline UPDATED');
    if ('by' in value) problems.push('an update without a write (cause) names no one (by)');
  }

  if ('owner' in value) {
    const owner = value.owner;
    if (!isRecord(owner)) problems.push('owner, when present, must be an object');
    else
      for (const key of ['apiVersion', 'kind', 'name', 'uid']) {
        if (typeof owner[key] !== 'string' || owner[key] === '')
          problems.push(`owner.${key} must be a non-empty string`);
      }
  }
  if ('by' in value) problems.push(...byViolations(value.by, type));
  if ('usedBy' in value) problems.push(...usedByViolations(value.usedBy, value.object));
  if ('rollsOut' in value) problems.push(...rollsOutViolations(value.rollsOut));

  if (!isRecord(object)) {
    problems.push('object is missing or not an object');
  } else {
    for (const key of Object.keys(object))
      if (!OBJECT_KEYS.has(key)) problems.push(`unknown field "object.${key}"`);
    for (const key of ['apiVersion', 'kind', 'resource', 'name', 'uid', 'resourceVersion']) {
      if (typeof object[key] !== 'string' || object[key] === '')
        problems.push(`object.${key} must be a non-empty string`);
    }
    if ('namespace' in object && (typeof object.namespace !== 'string' || object.namespace === '')) {
      problems.push(
        'object.namespace, when present, must be a non-empty string (absent for cluster-scoped objects)',
      );
    }
    if (value.id !== `${String(object.uid)}:${String(object.resourceVersion)}`) {
      problems.push(`id ${JSON.stringify(value.id)} is not "uid:resourceVersion"`);
    }
  }

  if (type === 'UPDATED') {
    if (!Array.isArray(changes) || changes.length === 0) {
      problems.push('an UPDATED event needs a non-empty changes list');
    } else {
      changes.forEach((change: unknown, index) => {
        const at = `changes[${index}]`;
        if (!isRecord(change)) {
          problems.push(`${at} is not an object`);
          return;
        }
        for (const key of Object.keys(change))
          if (!CHANGE_KEYS.has(key)) problems.push(`unknown field "${at}.${key}"`);
        const { op, path } = change;
        if (op !== 'add' && op !== 'remove' && op !== 'replace')
          problems.push(`${at}.op ${JSON.stringify(op)}`);
        if (typeof path !== 'string' || !JSON_POINTER.test(path)) {
          problems.push(`${at}.path ${JSON.stringify(path)} is not an RFC 6901 JSON Pointer`);
        }
        if ((op === 'add') === 'from' in change) {
          problems.push(`${at}: "from" must be ${op === 'add' ? 'absent' : 'present'} for op ${String(op)}`);
        }
        if ('manager' in change && (typeof change.manager !== 'string' || change.manager === '')) {
          problems.push(`${at}.manager, when present, must be a non-empty string`);
        }
        if ((op === 'remove') === 'to' in change) {
          problems.push(`${at}: "to" must be ${op === 'remove' ? 'absent' : 'present'} for op ${String(op)}`);
        }
      });
    }
  } else if (changes !== undefined) {
    problems.push(`a ${String(type)} event carries no changes`);
  }
  return problems;
}

const OUTCOME_KEYS = new Set([
  'id',
  'type',
  'time',
  'cluster',
  'object',
  'owner',
  'follows',
  'verdict',
  'after',
  'evidence',
  'by',
  'offline',
]);
const EVIDENCE_KEYS = new Set([
  'summary',
  'revision',
  'replicas',
  'pods',
  'podCount',
  'warnings',
  'conditions',
  'supersededBy',
  'note',
]);

/** What is wrong with an OUTCOME (docs/event.md, docs/outcomes.md). */
function outcomeViolations(value: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(value)) if (!OUTCOME_KEYS.has(key)) problems.push(`unknown field "${key}"`);
  const follows = value.follows;
  if (!Array.isArray(follows) || follows.length === 0 || !follows.every((id) => typeof id === 'string'))
    problems.push('follows must be a non-empty list of event ids');
  else if (value.id !== `outcome:${follows[0]}`)
    problems.push(`id ${JSON.stringify(value.id)} is not "outcome:" and the first id followed`);
  if (!VERDICTS.includes(value.verdict as never))
    problems.push(`bad verdict ${JSON.stringify(value.verdict)}`);
  if (typeof value.after !== 'number' || !(value.after >= 0))
    problems.push('after must be a number of seconds, at least 0');
  if (typeof value.time !== 'string' || !ISO_TIME.test(value.time))
    problems.push('time is not an ISO 8601 UTC timestamp');
  const object = value.object;
  if (!isRecord(object) || typeof object.uid !== 'string' || typeof object.kind !== 'string')
    problems.push('object is missing its kind or uid');
  const evidence = value.evidence;
  if (!isRecord(evidence)) return [...problems, 'evidence is missing'];
  for (const key of Object.keys(evidence))
    if (!EVIDENCE_KEYS.has(key)) problems.push(`unknown field "evidence.${key}"`);
  if (typeof evidence.summary !== 'string' || evidence.summary === '')
    problems.push('evidence.summary is empty');
  for (const list of ['pods', 'warnings', 'conditions'])
    if (!Array.isArray(evidence[list])) problems.push(`evidence.${list} must be a list`);
  if (typeof evidence.podCount !== 'number') problems.push('evidence.podCount must be a number');
  if ('by' in value) problems.push(...byViolations(value.by, 'OUTCOME'));
  return problems;
}

/** What is wrong with an event's `by` (docs/who.md). */
function byViolations(by: unknown, type: unknown): string[] {
  if (!isRecord(by)) return ['by, when present, must be an object'];
  const problems: string[] = [];
  // The audit webhook may name who deleted an object; no field manager wrote a deletion.
  if (type === 'DELETED' && by.managers !== undefined)
    problems.push('a DELETED event names no field manager');
  for (const key of Object.keys(by)) if (!BY_KEYS.has(key)) problems.push(`unknown field "by.${key}"`);
  if (by.match !== undefined && !['exact', 'nearest', 'ambiguous'].includes(String(by.match)))
    problems.push('by.match, when present, is exact, nearest or ambiguous');
  if (by.match === 'ambiguous' && by.user !== undefined) problems.push('an ambiguous match names nobody');
  const managers = by.managers;
  if (managers === undefined) return problems;
  if (!Array.isArray(managers) || managers.length === 0)
    return [...problems, 'by.managers must be a non-empty list'];
  managers.forEach((manager: unknown, index) => {
    const at = `by.managers[${index}]`;
    if (!isRecord(manager)) {
      problems.push(`${at} is not an object`);
      return;
    }
    for (const key of Object.keys(manager))
      if (!MANAGER_KEYS.has(key)) problems.push(`unknown field "${at}.${key}"`);
    for (const key of ['manager', 'operation']) {
      if (typeof manager[key] !== 'string' || manager[key] === '')
        problems.push(`${at}.${key} must be a non-empty string`);
    }
    if ('time' in manager && (typeof manager.time !== 'string' || !ISO_TIME.test(manager.time))) {
      problems.push(`${at}.time, when present, must be an ISO 8601 UTC timestamp`);
    }
  });
  return problems;
}

/** What is wrong with an event's `usedBy` (docs/used-by.md). */
function usedByViolations(usedBy: unknown, object: unknown): string[] {
  if (!isRecord(usedBy)) return ['usedBy, when present, must be an object'];
  const problems: string[] = [];
  if (isRecord(object) && object.kind !== 'ConfigMap' && object.kind !== 'Secret')
    problems.push('usedBy belongs only on a ConfigMap or Secret event');
  for (const key of Object.keys(usedBy))
    if (!USED_BY_KEYS.has(key)) problems.push(`unknown field "usedBy.${key}"`);
  if (usedBy.incomplete !== undefined && usedBy.incomplete !== 'syncing' && usedBy.incomplete !== 'limit')
    problems.push('usedBy.incomplete, when present, is syncing or limit');
  if (usedBy.unreadKeys !== undefined && !stringList(usedBy.unreadKeys, true))
    problems.push('usedBy.unreadKeys, when present, is a non-empty list of strings');
  if (!Array.isArray(usedBy.workloads)) return [...problems, 'usedBy.workloads must be a list'];
  usedBy.workloads.forEach((workload: unknown, index) => {
    const at = `usedBy.workloads[${index}]`;
    if (!isRecord(workload)) {
      problems.push(`${at} is not an object`);
      return;
    }
    for (const key of Object.keys(workload))
      if (!WORKLOAD_KEYS.has(key)) problems.push(`unknown field "${at}.${key}"`);
    const owner = workload.object;
    if (
      !isRecord(owner) ||
      ['apiVersion', 'kind', 'name', 'uid'].some((key) => typeof owner[key] !== 'string')
    )
      problems.push(`${at}.object must name apiVersion, kind, name and uid`);
    if (!stringList(workload.keys, false)) problems.push(`${at}.keys must be a list of strings`);
    if (
      'live' in workload &&
      workload.live !== true &&
      workload.live !== false &&
      workload.live !== 'eventually'
    )
      problems.push(`${at}.live, when present, is true, false or "eventually"`);
    if ('pods' in workload) {
      const pods = workload.pods;
      if (
        !isRecord(pods) ||
        typeof pods.total !== 'number' ||
        ('old' in pods && typeof pods.old !== 'number')
      )
        problems.push(`${at}.pods must have a number total (and old)`);
    }
    if (!Array.isArray(workload.via) || workload.via.length === 0) {
      problems.push(`${at}.via must be a non-empty list`);
      return;
    }
    workload.via.forEach((via: unknown, viaIndex) => {
      if (!isRecord(via) || !VIA_TYPES.has(String(via.type))) {
        problems.push(`${at}.via[${viaIndex}].type is not one of ${[...VIA_TYPES].join(', ')}`);
        return;
      }
      for (const key of Object.keys(via))
        if (!VIA_KEYS.has(key)) problems.push(`unknown field "${at}.via[${viaIndex}].${key}"`);
    });
  });
  return problems;
}

/** What is wrong with an event's `rollsOut`. */
function rollsOutViolations(links: unknown): string[] {
  if (!Array.isArray(links) || links.length === 0) return ['rollsOut, when present, is a non-empty list'];
  return links.flatMap((link: unknown, index) =>
    isRecord(link) &&
    isRecord(link.object) &&
    typeof link.object.kind === 'string' &&
    typeof link.object.name === 'string' &&
    typeof link.id === 'string' &&
    typeof link.time === 'string' &&
    ISO_TIME.test(link.time)
      ? []
      : [`rollsOut[${index}] must have object (kind, name), id and an ISO time`],
  );
}

function stringList(value: unknown, nonEmpty: boolean): boolean {
  return (
    Array.isArray(value) && (!nonEmpty || value.length > 0) && value.every((item) => typeof item === 'string')
  );
}

/** Throws, naming every problem, unless `value` is a valid event. */
export function assertEvent(value: unknown): asserts value is TestEvent {
  const problems = contractViolations(value);
  if (problems.length > 0) {
    throw new Error(`not a valid kubediff event (${problems.join('; ')}): ${JSON.stringify(value)}`);
  }
}

/**
 * The stream invariants of "Correctness" 2, over every event of a run: ids are unique; per object
 * (uid) the types go ADDED? → UPDATED* → DELETED? and nothing follows a DELETED; and each UPDATED's
 * `from` side is what the object's previous event said (`to` of the last change at that path). A run
 * without events fails: it would check nothing.
 */
export function assertStreamInvariants(all: readonly TestEvent[]): void {
  // OUTCOMEs are not changes of their object: they have invariants of their own.
  const events = all.filter((event) => !outcomeOf(event));
  const listing = () => events.map((event, index) => `  #${index} ${describeEvent(event)}`).join('\n');
  const ids = new Map<string, number>();
  const lastType = new Map<string, TestEvent['type']>();
  /** uid → path → the value last reported there (undefined: last reported as removed). */
  const known = new Map<string, Map<string, unknown>>();
  nonEmpty(events, 'events in the stream').forEach((event, index) => {
    const earlier = ids.get(event.id);
    assert.equal(earlier, undefined, `event #${index} repeats the id of #${earlier}:\n${listing()}`);
    ids.set(event.id, index);
    const uid = event.object.uid;
    const previous = lastType.get(uid);
    if (event.type === 'ADDED') {
      assert.equal(
        previous,
        undefined,
        `#${index} ADDED after a ${previous} of the same object:\n${listing()}`,
      );
    } else {
      assert.notEqual(previous, 'DELETED', `#${index} ${event.type} after a DELETED:\n${listing()}`);
    }
    lastType.set(uid, event.type);
    const paths = known.get(uid) ?? new Map<string, unknown>();
    known.set(uid, paths);
    for (const change of event.changes ?? []) {
      if (!paths.has(change.path)) {
        paths.set(change.path, change.op === 'remove' ? undefined : change.to);
        continue;
      }
      const before = paths.get(change.path);
      if (before === undefined) {
        assert.equal(
          change.op,
          'add',
          `#${index}: ${change.path} was removed before, so it can only be added`,
        );
      } else {
        assert.notEqual(change.op, 'add', `#${index}: ${change.path} already had a value`);
        assert.ok(
          isDeepStrictEqual(change.from, before),
          `#${index}: ${change.path} goes from ${JSON.stringify(change.from)}, but the previous event left it at ${JSON.stringify(before)}:\n${listing()}`,
        );
      }
      paths.set(change.path, change.op === 'remove' ? undefined : change.to);
    }
  });
}
