// Who made a change, from managedFields (the API server's own record, no audit log needed):
// - `by`: the managers whose entries this version changed. A manager that writes gets its entry's time
//   set; one whose fields were taken over only loses fields. Times have one-second resolution and some
//   entries have none, so a change of the owned fields (not a shrink) counts as a write too.
// - each change's `manager`: the owner of its path in the new version. A removed path has no owner any
//   more: it goes to the one manager that wrote, when there is exactly one.
// When the object has no managedFields, or the answer is not unique, nothing is said: no guess.

import { ownersOf } from '../diff/field-owners.ts';
import { getProperty, isJsonObject } from '../diff/json.ts';
import { parsePointer } from '../diff/pointer.ts';
import type { Change } from '../diff/types.ts';
import {
  type EntrySignature,
  type ManagedFieldsEntry,
  type ManagersSignature,
  parseManagersSignature,
} from '../kube/managed-fields.ts';
import type { JsonObject } from '../kube/types.ts';
import type { ManagerRef } from './event.ts';

export interface UpdateAttribution {
  /** Absent when no manager could be named. */
  managers?: ManagerRef[];
  /** The changes, each with its `manager` where one owns it (new objects; the input is not mutated). */
  changes: Change[];
}

export interface AttributionInput {
  /** The previous version's signature; undefined when unknown (loaded from --state, or it had none). */
  previousSignature: ManagersSignature | undefined;
  /** The new version's signature, entry by entry the same as `entries`. */
  currentSignature: ManagersSignature | undefined;
  entries: readonly ManagedFieldsEntry[];
  previous: JsonObject;
  current: JsonObject;
  changes: readonly Change[];
}

export function attributeUpdate(input: AttributionInput): UpdateAttribution {
  const { entries } = input;
  const writers = writersOf(input);
  const writerNames = new Set(writers?.map((entry) => entry.manager));
  const soleWriter = writerNames.size === 1 ? writers![0] : undefined;
  const ownerEntries = new Set<ManagedFieldsEntry>();
  const changes = input.changes.map((change): Change => {
    const owner = ownerOf(change, input, writerNames, soleWriter);
    if (!owner) return change;
    ownerEntries.add(owner);
    return { ...change, manager: owner.manager };
  });
  const named = new Set(changes.map((change) => change.manager).filter((name) => name !== undefined));
  // The writers that made a reported change; all writers when none is an owner (every reported change
  // was removed, or owned by nobody); without writers, the owners of the changes.
  const involved = writers?.filter((entry) => named.has(entry.manager)) ?? [];
  const chosen =
    involved.length > 0
      ? involved
      : writers && writers.length > 0
        ? writers
        : entries.filter((entry) => ownerEntries.has(entry));
  return chosen.length > 0 ? { managers: chosen.map(managerRef), changes } : { changes };
}

/** The creating manager of an object seen as ADDED, when the entries tell it unambiguously. */
export function creatorOf(
  entries: readonly ManagedFieldsEntry[],
  object: JsonObject,
): ManagerRef | undefined {
  // A subresource write (status, scale) never creates an object.
  const main = entries.filter((entry) => entry.subresource === undefined);
  if (main.length === 1) return managerRef(main[0]!);
  // Seen later (--initial, a relist): the creator's entry is the one stamped at creation, if only one is.
  const metadata = getProperty(object, 'metadata');
  const created = isJsonObject(metadata) ? getProperty(metadata, 'creationTimestamp') : undefined;
  if (typeof created !== 'string') return undefined;
  const atCreation = main.filter((entry) => entry.time === created);
  return atCreation.length === 1 ? managerRef(atCreation[0]!) : undefined;
}

export function managerRef(entry: ManagedFieldsEntry): ManagerRef {
  const ref: ManagerRef = { manager: entry.manager, operation: entry.operation };
  if (entry.subresource !== undefined) ref.subresource = entry.subresource;
  if (entry.time !== undefined) ref.time = entry.time;
  return ref;
}

/**
 * The entries this version wrote: new, restamped, or with other owned fields (not only fewer). When none
 * did, a manager whose entry vanished removed all it owned: it wrote, if it is the only one. Undefined
 * when that cannot be told (no previous signature).
 */
function writersOf(input: AttributionInput): ManagedFieldsEntry[] | undefined {
  if (input.previousSignature === undefined || input.currentSignature === undefined) return undefined;
  const previous = parseManagersSignature(input.previousSignature);
  const before = new Map<string, EntrySignature>();
  for (const entry of previous) before.set(entry.whoAndWhen, entry);
  const now = parseManagersSignature(input.currentSignature);
  // The signature is built from these very entries; a mismatch means it cannot be trusted.
  if (now.length !== input.entries.length) return undefined;
  const writers = input.entries.filter((_, index) => {
    const signature = now[index]!;
    const was = before.get(signature.whoAndWhen);
    if (!was) return true;
    return was.fields !== signature.fields && signature.count >= was.count;
  });
  if (writers.length > 0) return writers;
  const present = new Set(now.map(entryIdentity));
  const vanished = previous.filter((entry) => !present.has(entryIdentity(entry)));
  if (vanished.length !== 1) return writers;
  const { manager, operation, subresource } = vanished[0]!;
  return [subresource === undefined ? { manager, operation } : { manager, operation, subresource }];
}

function entryIdentity(entry: EntrySignature): string {
  return `${entry.manager}\n${entry.operation}\n${entry.subresource ?? ''}`;
}

function ownerOf(
  change: Change,
  input: AttributionInput,
  writerNames: ReadonlySet<string>,
  soleWriter: ManagedFieldsEntry | undefined,
): ManagedFieldsEntry | undefined {
  if (change.op === 'remove') return soleWriter;
  let segments: string[];
  try {
    segments = parsePointer(change.path);
  } catch {
    return undefined;
  }
  const owners = ownersOf(input.entries, input.current, segments);
  const names = new Set(owners.map((entry) => entry.manager));
  if (names.size === 1) return owners.find((entry) => writerNames.has(entry.manager)) ?? owners[0];
  if (names.size === 0) return undefined;
  // Shared (several appliers set the same value, or a map partly each one's): the one that wrote now.
  const writing = owners.filter((entry) => writerNames.has(entry.manager));
  return new Set(writing.map((entry) => entry.manager)).size === 1 ? writing[0] : undefined;
}
