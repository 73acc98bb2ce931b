// `kubediff why <type>/<name> [--at T] [--window D] [-o text|json]`: the changes that may explain why an
// object (a pod, a workload) became unhealthy, from the history (docs/outcomes.md, "kubediff why"):
//
// - when: the newest `degraded` or `failed` OUTCOME of the object or of one of its owners, at or before
//   --at when given; --at alone when given; else now;
// - where: the changes in the window (--window, default 1h) before then, to the object itself, its
//   owners (its ownerReferences followed up, and the root owner its events name), and what its pods use
//   (src/kube/pod-references.ts: its ServiceAccount and PersistentVolumeClaims, and with the "used by"
//   work its ConfigMaps and Secrets);
// - which: a change of an owner's or the object's spec (its creation too, for the root owner), not what
//   a derived object's controllers change in it (a ReplicaSet's replicas, a pod's node); any change of
//   what the pods use;
// - newest first, each with who made it. Exit 0 when there is at least one, 1 when none, 2 for usage.
import { Chalk } from 'chalk';
import type { KubediffEvent, OutcomeEvent } from '../../events/event.ts';
import { podSpecOf, podSpecReferences, referencedObjects } from '../../kube/pod-references.ts';
import { groupOf, isJsonObject, type JsonObject, type ResourceType } from '../../kube/types.ts';
import { renderChange } from '../../sinks/core/pretty.ts';
import { byText } from '../../sinks/who.ts';
import type { ObjectRef } from '../../state/timeline-reader.ts';
import { plural } from '../../util/count-text.ts';
import { AGE_RULES, formatDuration, parseDurationSetting } from '../../util/duration.ts';
import { errorMessage } from '../../util/errors.ts';
import { printable } from '../../util/terminal-text.ts';
import { EXIT_FAILURE, ExitCode } from '../exit-codes.ts';
import { HistorySource, type HistorySourceFlags } from './history-source.ts';
import { describeRef, ObjectTimeline, type RecordedEvent, type Version } from './object-timeline.ts';
import { describePoint, parseTimePoint, type TimePoint } from './time-point.ts';
import type { CommandIo } from './version-notes.ts';

export interface WhyFlags extends HistorySourceFlags {
  at?: string;
  window?: string;
  output?: 'text' | 'json';
}

/** How far back before the point `why` looks, unless --window says. */
export const DEFAULT_WHY_WINDOW_MS = 3_600_000;
/** Owners followed up from the object, at most. */
const MAX_OWNERS = 8;
/** The verdicts that mean the object became unhealthy. */
const UNHEALTHY = ['degraded', 'failed'] as const;

/** How a changed object relates to the one asked about. */
type Relation = 'itself' | 'owner' | 'uses';

/** A change that may explain it. */
interface Candidate {
  event: RecordedEvent;
  relation: Relation;
  /** What the object is to it: `its ReplicaSet`, `its ServiceAccount (serviceAccountName)`. */
  role: string;
}

/** An object of the chain: the one asked about, or an owner. */
interface Member {
  ref: ObjectRef;
  kind: string;
  timeline: ObjectTimeline;
  /** The root owner (nothing owns it): its creation is a cause too. */
  root: boolean;
}

export async function runWhy(target: string, flags: WhyFlags, io: CommandIo): Promise<void> {
  const now = (io.now ?? Date.now)();
  const windowMs =
    flags.window !== undefined
      ? parseDurationSetting('--window', flags.window, AGE_RULES)
      : DEFAULT_WHY_WINDOW_MS;
  const at = flags.at !== undefined ? parseTimePoint('--at', flags.at, now) : undefined;
  const source = await HistorySource.open(flags, 'why');
  try {
    const timeline = await source.timeline(target);
    const types = await source.recordedTypes();
    const notes: string[] = [];
    const version = lastVersion(timeline, at, notes);
    const chain = await chainOf(source, timeline, version, types, notes);
    const unhealthy = at === undefined ? await unhealthySince(source, chain) : undefined;
    const end = at !== undefined ? pointTime(at, timeline) : unhealthy ? Date.parse(unhealthy.time) : now;
    const start = end - windowMs;
    const inWindow = (event: RecordedEvent) => {
      const time = Date.parse(event.time);
      return time >= start && time <= end;
    };
    const candidates: Candidate[] = [];
    for (const member of chain) {
      const isSelf = member.timeline === timeline;
      for (const event of member.timeline.events) {
        if (!inWindow(event) || !isCause(event, member.root)) continue;
        candidates.push({
          event,
          relation: isSelf ? 'itself' : 'owner',
          role: isSelf ? 'itself' : `its ${member.kind}`,
        });
      }
    }
    candidates.push(...(await usedChanges(source, chain, version, types, inWindow, notes)));
    candidates.sort((a, b) => b.event.time.localeCompare(a.event.time) || b.event.seq - a.event.seq);
    const header = headerOf(timeline.ref, unhealthy, at, end, windowMs, candidates.length);
    if (flags.output === 'json') {
      for (const line of [header, ...notes]) io.stderr.write(`kubediff: ${printable(line)}\n`);
      for (const candidate of candidates) io.stdout.write(`${JSON.stringify(jsonOf(candidate))}\n`);
    } else {
      io.stdout.write(renderWhy(header, notes, candidates, io));
    }
    if (candidates.length === 0) throw new ExitCode(EXIT_FAILURE);
  } finally {
    await source.close();
  }
}

/**
 * The object's version to read its owners and pod spec from: at --at, else its last one; a deleted
 * object's versions are not kept, so then its owners come from its events alone (with a note).
 */
function lastVersion(
  timeline: ObjectTimeline,
  at: TimePoint | undefined,
  notes: string[],
): Version | undefined {
  try {
    const version = at ? timeline.versionAt(at) : timeline.latestVersion();
    if (version.object) return version;
    notes.push(`${describeRef(timeline.ref)} did not exist then: its owners are named by its events.`);
  } catch (error) {
    notes.push(`${errorMessage(error).replace(/\.$/, '')}; its owners are named by its events.`);
  }
  return undefined;
}

/** The object, its owners by ownerReferences (their versions at the same time), and its root owner. */
async function chainOf(
  source: HistorySource,
  timeline: ObjectTimeline,
  version: Version | undefined,
  types: readonly ResourceType[],
  notes: string[],
): Promise<Member[]> {
  const self = timeline.events.at(-1);
  const rootOwner = self?.owner && self.owner.uid !== self.object.uid ? self.owner : undefined;
  const chain: Member[] = [
    { ref: timeline.ref, kind: self?.object.kind ?? '', timeline, root: rootOwner === undefined },
  ];
  const seen = new Set([self?.object.uid]);
  let object = version?.object;
  while (object && chain.length <= MAX_OWNERS) {
    const owner = controllerOf(object);
    if (!owner || seen.has(owner.uid)) break;
    seen.add(owner.uid);
    const member = await memberOf(source, timeline.ref, owner, types, notes, owner.uid === rootOwner?.uid);
    if (!member) break;
    chain.push(member);
    object = member.timeline.events.length > 0 ? safeLatest(member.timeline) : undefined;
  }
  if (rootOwner && !seen.has(rootOwner.uid)) {
    const member = await memberOf(source, timeline.ref, rootOwner, types, notes, true);
    if (member) chain.push(member);
  }
  return chain;
}

async function memberOf(
  source: HistorySource,
  near: ObjectRef,
  owner: { apiVersion: string; kind: string; name: string },
  types: readonly ResourceType[],
  notes: string[],
  root: boolean,
): Promise<Member | undefined> {
  const resource = resourceOf(types, owner.apiVersion, owner.kind);
  if (!resource) {
    notes.push(
      `its ${owner.kind} ${owner.name} is not recorded (its type is not watched): its changes are not known.`,
    );
    return undefined;
  }
  const ref: ObjectRef = {
    resource: resource.name,
    name: owner.name,
    ...(resource.namespaced && near.namespace !== undefined ? { namespace: near.namespace } : {}),
    ...(near.cluster !== undefined ? { cluster: near.cluster } : {}),
  };
  const timeline = await ObjectTimeline.read(source.reader, ref);
  if (timeline.events.length === 0) {
    notes.push(`its ${owner.kind} ${owner.name} has no recorded history.`);
    return undefined;
  }
  return { ref, kind: owner.kind, timeline, root };
}

/** The newest version of an owner, or undefined when it cannot be rebuilt (deleted). */
function safeLatest(timeline: ObjectTimeline): JsonObject | undefined {
  try {
    return timeline.latestVersion().object;
  } catch {
    return undefined;
  }
}

/** The ownerReference marked `controller: true`. */
function controllerOf(
  object: JsonObject,
): { apiVersion: string; kind: string; name: string; uid: string } | undefined {
  const metadata = object.metadata;
  const references = isJsonObject(metadata) ? metadata.ownerReferences : undefined;
  for (const reference of Array.isArray(references) ? references : []) {
    if (!isJsonObject(reference) || reference.controller !== true) continue;
    const { apiVersion, kind, name, uid } = reference;
    if (
      typeof apiVersion === 'string' &&
      typeof kind === 'string' &&
      typeof name === 'string' &&
      typeof uid === 'string'
    )
      return { apiVersion, kind, name, uid };
  }
  return undefined;
}

/** The recorded type of `kind` in `apiVersion`'s group: its qualified name and scope. */
function resourceOf(
  types: readonly ResourceType[],
  apiVersion: string,
  kind: string,
): { name: string; namespaced: boolean } | undefined {
  const group = groupOf(apiVersion);
  const type = types.find((candidate) => candidate.kind === kind && candidate.group === group);
  if (!type) return undefined;
  return { name: group === '' ? type.resource : `${type.resource}.${group}`, namespaced: type.namespaced };
}

/** The newest `degraded` or `failed` OUTCOME of any object of the chain. */
async function unhealthySince(
  source: HistorySource,
  chain: readonly Member[],
): Promise<OutcomeEvent | undefined> {
  let newest: OutcomeEvent | undefined;
  for (const member of chain) {
    for (const outcome of await source.outcomes(member.ref, UNHEALTHY)) {
      if (!newest || outcome.time > newest.time) newest = outcome;
    }
  }
  return newest;
}

/**
 * The spec paths a derived object's controllers change (a ReplicaSet scaled by its Deployment, a pod
 * bound to a node by the scheduler): not causes.
 */
const DERIVED_PATHS = new Set(['/spec/replicas', '/spec/nodeName']);

/** A change that may explain it (see the top). */
function isCause(event: KubediffEvent, root: boolean): boolean {
  if (event.type === 'OUTCOME' || event.type === 'DELETED') return false;
  if (event.type === 'ADDED') return root;
  const specPaths = (event.changes ?? []).filter((change) => change.path.startsWith('/spec/'));
  return root ? specPaths.length > 0 : specPaths.some((change) => !DERIVED_PATHS.has(change.path));
}

/** The changes of what the pods use, in the window: the object's pod spec, or else its root owner's template. */
async function usedChanges(
  source: HistorySource,
  chain: readonly Member[],
  version: Version | undefined,
  types: readonly ResourceType[],
  inWindow: (event: RecordedEvent) => boolean,
  notes: string[],
): Promise<Candidate[]> {
  const first = chain[0] as Member;
  const root = chain.find((member) => member.root);
  const spec =
    (version?.object && podSpecOfObject(first.kind, version.object)) ??
    (root ? specOfLatest(root) : undefined);
  if (!spec) return [];
  const found: Candidate[] = [];
  // ConfigMaps and Secrets (env, envFrom, volumes, projected, image pull secrets), the ServiceAccount, PVCs.
  const references = podSpecReferences(spec);
  for (const reference of referencedObjects(references)) {
    const ways = new Set(
      references
        .filter((use) => use.kind === reference.kind && use.name === reference.name)
        .map((use) => use.type),
    );
    const resource = resourceOf(types, 'v1', reference.kind);
    if (!resource) continue;
    const ref: ObjectRef = {
      resource: resource.name,
      name: reference.name,
      ...(first.ref.namespace !== undefined ? { namespace: first.ref.namespace } : {}),
      ...(first.ref.cluster !== undefined ? { cluster: first.ref.cluster } : {}),
    };
    const timeline = await ObjectTimeline.read(source.reader, ref);
    if (timeline.events.length === 0) {
      notes.push(`the ${reference.kind} ${reference.name} its pods use has no recorded history.`);
      continue;
    }
    for (const event of timeline.events) {
      if (inWindow(event))
        found.push({ event, relation: 'uses', role: `its ${reference.kind} (${[...ways].join(', ')})` });
    }
  }
  return found;
}

function specOfLatest(member: Member): JsonObject | undefined {
  const object = safeLatest(member.timeline);
  return object ? podSpecOfObject(member.kind, object) : undefined;
}

/** The pod spec of a Pod or a workload as recorded, its API group read from its own apiVersion. */
function podSpecOfObject(kind: string, object: JsonObject): JsonObject | undefined {
  const apiVersion = typeof object.apiVersion === 'string' ? object.apiVersion : 'v1';
  return podSpecOf(groupOf(apiVersion), kind, object);
}

/** The time of a point: a time, or the time of the event it names. */
function pointTime(point: TimePoint, timeline: ObjectTimeline): number {
  if (point.kind === 'time') return point.ms;
  const event = timeline.events.find((candidate) => candidate.id === point.id);
  return event ? Date.parse(event.time) : Date.now();
}

/** The first line: when it became unhealthy (or the point asked for), and how many changes came before. */
function headerOf(
  ref: ObjectRef,
  unhealthy: OutcomeEvent | undefined,
  at: TimePoint | undefined,
  end: number,
  windowMs: number,
  count: number,
): string {
  const window = formatDuration(windowMs);
  const found = `${count === 0 ? 'no change' : plural(count, 'change')} in the ${window} before, to it, its owners and what its pods use${count > 0 ? ', newest first' : ''}.`;
  if (at) return `${describeRef(ref)} at ${describePoint(at)}: ${found}`;
  if (unhealthy) {
    const { object } = unhealthy;
    return `${describeRef(ref)}: ${object.kind} ${object.namespace ? `${object.namespace}/` : ''}${object.name} was ${unhealthy.verdict} at ${unhealthy.time} (${unhealthy.evidence.summary}; the OUTCOME of ${unhealthy.follows[0]}): ${found}`;
  }
  return `${describeRef(ref)}: no degraded or failed OUTCOME recorded for it or its owners; up to now (${new Date(end).toISOString()}): ${found}`;
}

function jsonOf(candidate: Candidate): Record<string, unknown> {
  const { event } = candidate;
  return {
    time: event.time,
    relation: candidate.relation,
    role: candidate.role,
    id: event.id,
    type: event.type,
    object: event.object,
    ...(event.by ? { by: event.by } : {}),
    ...(event.changes ? { changes: event.changes } : {}),
  };
}

function renderWhy(
  header: string,
  notes: readonly string[],
  candidates: readonly Candidate[],
  io: CommandIo,
): string {
  const chalk = new Chalk({ level: io.isTTY && !process.env.NO_COLOR ? 1 : 0 });
  const out = [header, ...notes].map((line) => `# ${printable(line)}`);
  for (const { event, role } of candidates) {
    const { object } = event;
    const by = byText(event.by);
    const name = `${object.kind} ${object.namespace ? `${object.namespace}/` : ''}${object.name}`;
    out.push(
      `${chalk.dim(event.time)}  ${event.type} ${chalk.bold(printable(name))} (${printable(role)})${by ? ` by ${chalk.magenta(printable(by))}` : ''}`,
    );
    for (const change of event.changes ?? []) out.push(`    ${renderChange(change, chalk, 100)}`);
  }
  return `${out.join('\n')}\n`;
}
