// metadata.managedFields: the API server's record of which field manager owns which field, with the
// operation (Apply or Update), the subresource (scale, status) and the time of its last change. kubediff
// never keeps these entries (they are as large as the object's spec); it reads them as an object arrives
// and keeps only a signature small enough to tell, at the next version, whose entries changed.

import { isJsonObject, type JsonObject, type JsonValue, type KubeObject } from './types.ts';

/** The API server's limit on a field manager's name. */
const MANAGER_NAME_MAX = 128;

/** Why `text` cannot be a field manager name or glob, in a phrase; undefined when it can. */
export function managerNameProblem(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed !== '' && trimmed.length <= MANAGER_NAME_MAX) return undefined;
  return `not a field manager name: use its name as managedFields shows it (kubectl-set, helm, horizontal-pod-autoscaler), at most ${MANAGER_NAME_MAX} characters, or a glob such as kubectl*`;
}

/** One entry of metadata.managedFields as the API server serves it. */
export interface ManagedFieldsEntry {
  manager: string;
  operation: string;
  subresource?: string;
  /** One-second resolution; absent on some entries (subresource writes of older servers). */
  time?: string;
  apiVersion?: string;
  /** The owned fields as a trie of `f:`, `k:`, `v:`, `i:` and `.` keys; only FieldsV1 is defined. */
  fieldsV1?: JsonObject;
}

/**
 * The object's managedFields entries that name a manager; undefined when it has none. The entries as
 * served when all are well-formed (no copy on the hot path), else the well-formed ones, normalized.
 */
export function managedFieldsOf(object: KubeObject): readonly ManagedFieldsEntry[] | undefined {
  const entries = object.metadata.managedFields;
  if (!Array.isArray(entries) || entries.length === 0) return undefined;
  if (entries.every(isWellFormed)) return entries as unknown as ManagedFieldsEntry[];
  const result: ManagedFieldsEntry[] = [];
  for (const raw of entries) {
    if (!isJsonObject(raw)) continue;
    const { manager, operation, subresource, time, apiVersion, fieldsV1 } = raw;
    if (typeof manager !== 'string' || typeof operation !== 'string' || manager === '') continue;
    const entry: ManagedFieldsEntry = { manager, operation };
    if (typeof subresource === 'string' && subresource !== '') entry.subresource = subresource;
    if (typeof time === 'string') entry.time = time;
    if (typeof apiVersion === 'string') entry.apiVersion = apiVersion;
    if (isJsonObject(fieldsV1)) entry.fieldsV1 = fieldsV1;
    result.push(entry);
  }
  return result.length > 0 ? result : undefined;
}

/** An entry as the API server writes it: every field ManagedFieldsEntry declares has its declared type. */
function isWellFormed(raw: JsonValue): boolean {
  if (!isJsonObject(raw)) return false;
  const { manager, operation, subresource, time, apiVersion, fieldsV1 } = raw;
  return (
    typeof manager === 'string' &&
    manager !== '' &&
    typeof operation === 'string' &&
    (subresource === undefined || (typeof subresource === 'string' && subresource !== '')) &&
    (time === undefined || typeof time === 'string') &&
    (apiVersion === undefined || typeof apiVersion === 'string') &&
    (fieldsV1 === undefined || isJsonObject(fieldsV1))
  );
}

/**
 * A compact signature of an object's entries, one line per entry: a hash of who and when (manager,
 * operation, subresource, apiVersion, time), the count of owned fields and a hash of their keys (base 36),
 * then the operation, the subresource and the manager's name (so that a manager whose entry vanished,
 * because it removed all its fields, can still be named). About 18 bytes plus the name per manager.
 */
export type ManagersSignature = string;

/** One entry of a signature, read back. */
export interface EntrySignature {
  whoAndWhen: string;
  /** How many keys its field trie has. */
  count: number;
  /**
   * A hash of its field trie's keys: a same-second write that keeps the count (one field swapped for
   * another, as `kubectl edit` renaming a key does) still changes it.
   */
  fields: string;
  manager: string;
  operation: string;
  subresource?: string;
}

/** Manager names are printable (the API server validates them), so a newline separates entries. */
const ENTRY_SEPARATOR = '\n';
const OPERATION_CODES: Record<string, string> = { Apply: 'A', Update: 'U' };
const OPERATIONS: Record<string, string> = { A: 'Apply', U: 'Update' };

export function managersSignature(entries: readonly ManagedFieldsEntry[]): ManagersSignature {
  // Built by one join, which makes one flat string: concatenation would keep a tree of pieces alive.
  const parts: string[] = [];
  for (const entry of entries) {
    if (parts.length > 0) parts.push(ENTRY_SEPARATOR);
    const operation = OPERATION_CODES[entry.operation] ?? entry.operation.replaceAll('.', '');
    // The name goes last: it may hold dots; the subresource and the operation cannot.
    const walked = ownedFieldTotals(entry.fieldsV1);
    parts.push(
      whoAndWhenHash(entry).toString(36),
      '.',
      walked.count.toString(36),
      '.',
      ((walked.hash >>> 0) & HASH_MASK).toString(36),
      '.',
      operation,
      '.',
      entry.subresource ?? '',
      '.',
      entry.manager,
    );
  }
  return parts.join('');
}

export function parseManagersSignature(signature: ManagersSignature): EntrySignature[] {
  return signatureLines(signature).map(parseEntrySignature);
}

/** The signature's lines, one per entry, in the entries' order (compared whole, they are cheaper than parsed). */
export function signatureLines(signature: ManagersSignature): string[] {
  return signature === '' ? [] : signature.split(ENTRY_SEPARATOR);
}

/** A line's who-and-when hash: equal lines of two versions with another one are another write. */
export function whoAndWhenOf(line: string): string {
  const dot = line.indexOf('.');
  return dot < 0 ? line : line.slice(0, dot);
}

/** One line of a signature, read back. */
export function parseEntrySignature(line: string): EntrySignature {
  const parts: string[] = [];
  let start = 0;
  for (let field = 0; field < 5; field++) {
    const dot = line.indexOf('.', start);
    if (dot < 0) break;
    parts.push(line.slice(start, dot));
    start = dot + 1;
  }
  const [whoAndWhen = '', count = '0', fields = '', operation = '', subresource = ''] = parts;
  const entry: EntrySignature = {
    whoAndWhen,
    count: Number.parseInt(count, 36),
    fields,
    manager: line.slice(start),
    operation: OPERATIONS[operation] ?? operation,
  };
  if (subresource !== '') entry.subresource = subresource;
  return entry;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** 30 bits: the hashes stay small integers, and a collision (a write missed) is one in a billion. */
const HASH_MASK = 0x3fffffff;

function fnv(hash: number, text: string): number {
  let h = hash;
  for (let index = 0; index < text.length; index++) {
    h ^= text.charCodeAt(index);
    h = Math.imul(h, FNV_PRIME);
  }
  // A separator, so that ('ab','c') and ('a','bc') differ.
  return Math.imul(h ^ 0xff, FNV_PRIME);
}

function whoAndWhenHash(entry: ManagedFieldsEntry): number {
  let hash = fnv(FNV_OFFSET, entry.manager);
  hash = fnv(hash, entry.operation);
  hash = fnv(hash, entry.subresource ?? '');
  hash = fnv(hash, entry.apiVersion ?? '');
  hash = fnv(hash, entry.time ?? '');
  return (hash >>> 0) & HASH_MASK;
}

/** The walk's totals: the number of keys in a field trie, at every depth, and a hash of them (each with its depth). */
interface FieldTotals {
  count: number;
  hash: number;
}

function ownedFieldTotals(node: JsonObject | undefined): FieldTotals {
  const totals = { count: 0, hash: FNV_OFFSET };
  if (node) walkFields(node, totals);
  return totals;
}
const OPEN = '{'.charCodeAt(0);
const CLOSE = '}'.charCodeAt(0);

function walkFields(node: JsonObject, totals: FieldTotals): void {
  for (const key in node) {
    totals.count++;
    totals.hash = fnv(totals.hash, key);
    const child = node[key];
    if (isJsonObject(child)) {
      // Bracket the children, so that where a key sits in the trie counts too.
      totals.hash = Math.imul(totals.hash ^ OPEN, FNV_PRIME);
      walkFields(child, totals);
      totals.hash = Math.imul(totals.hash ^ CLOSE, FNV_PRIME);
    }
  }
}
