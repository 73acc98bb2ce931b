// Who made a change, from managedFields (the API server's own record, no audit log needed):
// - `by`: the managers whose entries this version changed. A manager that writes gets its entry's time
//   set; one whose fields were taken over only loses fields. Times have one-second resolution and some
//   entries have none, so an entry that owns more fields than before counts as a write too.
// - each change's `manager`: the owner of its path in the new version. A removed path has no owner any
//   more: it goes to the one manager that wrote, when there is exactly one.
// When the object has no managedFields, or the answer is not unique, nothing is said: no guess.

import { FieldOwnership } from '../diff/field-owners.ts';
import { getProperty } from '../diff/json.ts';
import type { Change } from '../diff/types.ts';
import {
  type EntrySignature,
  type ManagedFieldsEntry,
  type ManagersSignature,
  parseEntrySignature,
  parseManagersSignature,
  signatureLines,
  whoAndWhenOf,
} from '../kube/managed-fields.ts';
import type { JsonObject } from '../kube/types.ts';
import { isJsonObject } from '../kube/types.ts';
import type { ManagerRef } from './event.ts';

export interface UpdateAttribution {
  /** Absent when no manager could be named. */
  managers?: ManagerRef[];
  /** The changes, each with its `manager` where one owns it. */
  changes: Change[];
}

export interface AttributionInput {
  /** The previous version's signature; undefined when unknown (loaded from --state, or it had none). */
  previousSignature: ManagersSignature | undefined;
  /** The new version's signature, entry by entry the same as `entries`. */
  currentSignature: ManagersSignature | undefined;
  entries: readonly ManagedFieldsEntry[];
  /** The new version (normalized), which the changes' paths point into. */
  current: JsonObject;
  /** The diff's fresh changes: `manager` is set on them in place (copying each would cost more than the rest). */
  changes: Change[];
}

export function attributeUpdate(input: AttributionInput): UpdateAttribution {
  const { entries, changes } = input;
  const writers = writersOf(input);
  // An object has a handful of managers: arrays searched in place cost less than sets built per update.
  const writerNames = writers ? distinctManagers(writers) : [];
  const soleWriter = writerNames.length === 1 ? writers![0] : undefined;
  // The entries that own a reported change, each once, in the order first met.
  const owners: ManagedFieldsEntry[] = [];
  const ownership = new FieldOwnership(entries, input.current);
  for (const change of changes) {
    const owner = ownerOf(change, ownership, writerNames, soleWriter);
    if (!owner) continue;
    if (!owners.includes(owner)) owners.push(owner);
    change.manager = owner.manager;
  }
  // The writers that made a reported change; all writers when none is an owner (every reported change
  // was removed, or owned by nobody); without writers, the owners of the changes.
  const involved = writers?.filter((entry) => owners.some((owner) => owner.manager === entry.manager)) ?? [];
  const chosen =
    involved.length > 0
      ? involved
      : writers && writers.length > 0
        ? writers
        : entries.filter((entry) => owners.includes(entry));
  return chosen.length > 0 ? { managers: chosen.map(managerRef), changes } : { changes };
}

function distinctManagers(entries: readonly ManagedFieldsEntry[]): string[] {
  const names: string[] = [];
  for (const entry of entries) if (!names.includes(entry.manager)) names.push(entry.manager);
  return names;
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

function managerRef(entry: ManagedFieldsEntry): ManagerRef {
  const ref: ManagerRef = { manager: entry.manager, operation: entry.operation };
  if (entry.subresource !== undefined) ref.subresource = entry.subresource;
  if (entry.time !== undefined) ref.time = entry.time;
  return ref;
}

/**
 * The entries this version wrote: new, restamped, owning more fields than before, or as many but other
 * ones (a same-second write that swapped a field; one that lost fields to another manager did not write). When none
 * did, a manager whose entry vanished removed all it owned: it wrote, if it is the only one. Undefined
 * when that cannot be told (no previous signature).
 */
function writersOf(input: AttributionInput): ManagedFieldsEntry[] | undefined {
  if (input.previousSignature === undefined || input.currentSignature === undefined) return undefined;
  // The same entries as before: nobody's changed (a same-second rewrite of the same fields).
  if (input.previousSignature === input.currentSignature) return [];
  // Lines are compared whole first and read back only where they differ: most entries of an update are
  // either another write (a new time) or the same line as before.
  const before = new Map<string, string>();
  for (const line of signatureLines(input.previousSignature)) before.set(whoAndWhenOf(line), line);
  const now = signatureLines(input.currentSignature);
  // The signature is built from these very entries; a mismatch means it cannot be trusted.
  if (now.length !== input.entries.length) return undefined;
  const writers = input.entries.filter((_, index) => {
    const line = now[index]!;
    const was = before.get(whoAndWhenOf(line));
    if (was === undefined) return true;
    if (was === line) return false;
    // Not restamped: it wrote only if it owns more fields now (a same-second write that added some), or
    // as many but others (one that swapped a field).
    const signature = parseEntrySignature(line);
    const previous = parseEntrySignature(was);
    return (
      signature.count > previous.count ||
      (signature.count === previous.count && signature.fields !== previous.fields)
    );
  });
  if (writers.length > 0) return writers;
  const present = new Set(now.map((line) => entryIdentity(parseEntrySignature(line))));
  const vanished = parseManagersSignature(input.previousSignature).filter(
    (entry) => !present.has(entryIdentity(entry)),
  );
  if (vanished.length !== 1) return writers;
  const { manager, operation, subresource } = vanished[0]!;
  return [subresource === undefined ? { manager, operation } : { manager, operation, subresource }];
}

function entryIdentity(entry: EntrySignature): string {
  return `${entry.manager}\n${entry.operation}\n${entry.subresource ?? ''}`;
}

function ownerOf(
  change: Change,
  ownership: FieldOwnership,
  writerNames: readonly string[],
  soleWriter: ManagedFieldsEntry | undefined,
): ManagedFieldsEntry | undefined {
  if (change.op === 'remove') return soleWriter;
  let owners: ManagedFieldsEntry[];
  try {
    owners = ownership.ownersOf(change.path);
  } catch {
    // Not a JSON Pointer: nobody can be named.
    return undefined;
  }
  if (owners.length === 0) return undefined;
  if (owners.length === 1) return owners[0];
  const first = owners[0]!.manager;
  if (owners.every((entry) => entry.manager === first)) {
    return owners.find((entry) => writerNames.includes(entry.manager)) ?? owners[0];
  }
  // Shared (several appliers set the same value, or a map partly each one's): the one that wrote now.
  let writing: ManagedFieldsEntry | undefined;
  for (const entry of owners) {
    if (!writerNames.includes(entry.manager)) continue;
    if (writing && writing.manager !== entry.manager) return undefined;
    writing ??= entry;
  }
  return writing;
}
