// An object as YAML the way kubectl prints it (`kubectl get -o yaml`): keys in alphabetical order, list
// items at their key's indentation, no line folding (a long value stays one line, so diffs and blame
// stay line by line), multi-line strings as literal blocks, metadata.managedFields left out (as kubectl
// does by default). Rendered by the `yaml` package. The one YAML of an object: `kubediff show`, `diff`,
// `blame` and the page's versions (src/ui) all print this.
//
// Each line also gets a key: its place in the object, written so that the same line of two versions has
// the same key (blame compares versions by these keys). List items are placed by their merge key
// (`name` for containers, env, ports and volumes…, src/diff/list-keys.ts), so inserting a container does
// not move the others' lines; items without one by position. The lines of a multi-line string share
// their string's key and are told apart by their position in it.
import { isMap, isScalar, isSeq, LineCounter, type Node, parseDocument, Scalar, stringify } from 'yaml';
import type { JsonObject, JsonValue } from '../kube/types.ts';
import { isJsonObject } from '../kube/types.ts';
import { listItemKey } from './list-keys.ts';
import { formatPointer } from './pointer.ts';

export interface YamlLine {
  text: string;
  /** Where the line is in the object: the same in every version that has the line. */
  key: string;
  /** The line's path: map keys, and list items as their merge key or position (`containers[name=web]`). */
  path: string[];
  /** A line of a multi-line string: which line of it (0 = its first). */
  part?: number;
}

/** The YAML text of `object`, kubectl-like. */
export function objectYaml(object: JsonObject): string {
  return stringify(withoutManagedFields(object), {
    sortMapEntries: true,
    indentSeq: false,
    lineWidth: 0,
    // Normalized objects share unchanged subtrees between versions: never write them as anchors.
    aliasDuplicateObjects: false,
  });
}

/** `object` without metadata.managedFields (a shallow copy when it has them, else itself). */
function withoutManagedFields(object: JsonObject): JsonObject {
  const metadata = object.metadata;
  if (!isJsonObject(metadata) || !Object.hasOwn(metadata, 'managedFields')) return object;
  const { managedFields: _left, ...rest } = metadata;
  return { ...object, metadata: rest };
}

/** The YAML of `object`, line by line, each with its key. */
export function yamlLines(object: JsonObject): YamlLine[] {
  const text = objectYaml(object);
  const texts = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, keepSourceTokens: false });
  const placed: (Omit<YamlLine, 'text'> | undefined)[] = new Array(texts.length);
  const lineOf = (offset: number) => lineCounter.linePos(offset).line - 1;
  const place = (line: number, path: string[], part?: number) => {
    if (line >= 0 && line < placed.length && placed[line] === undefined) {
      placed[line] = { key: keyOf(path, part), path, ...(part !== undefined ? { part } : {}) };
    }
  };
  const visit = (node: Node | null | undefined, value: JsonValue | undefined, path: string[]) => {
    if (isMap(node)) {
      for (const pair of node.items) {
        const name = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        const below = [...path, name];
        const at = isScalar(pair.key) ? pair.key.range?.[0] : undefined;
        if (at !== undefined) place(lineOf(at), below);
        const child = isJsonObject(value) ? value[name] : undefined;
        visitValue(pair.value as Node | null, child, below);
      }
    } else if (isSeq(node)) {
      const items = Array.isArray(value) ? value : [];
      const ids = itemIds(items);
      node.items.forEach((item, index) => {
        const below = [...path, `[${ids[index] ?? `#${index}`}]`];
        const itemNode = item as Node | null;
        if (isScalar(itemNode) && itemNode.range) place(lineOf(itemNode.range[0]), below);
        visitValue(itemNode, items[index], below);
      });
    }
  };
  const visitValue = (node: Node | null, value: JsonValue | undefined, path: string[]) => {
    if (isScalar(node)) {
      const block = node.type === Scalar.BLOCK_LITERAL || node.type === Scalar.BLOCK_FOLDED;
      if (block && node.range) {
        const first = lineOf(node.range[0]) + 1;
        const last = lineOf(Math.max(node.range[0], node.range[1] - 1));
        for (let line = first; line <= last; line++) place(line, path, line - first);
      }
      return;
    }
    visit(node, value, path);
  };
  visit(document.contents as Node | null, object, []);
  let previous: Omit<YamlLine, 'text'> = { key: keyOf([]), path: [] };
  return texts.map((lineText, index) => {
    const at = placed[index] ?? { ...previous, key: `${previous.key}+${index}` };
    previous = at;
    return { text: lineText, ...at };
  });
}

/** Each item's identity: its merge key when it has one no other item of the list has, else none. */
function itemIds(items: readonly JsonValue[]): (string | undefined)[] {
  const keys = items.map((item) => listItemKey(item));
  const counts = new Map<string, number>();
  for (const key of keys) if (key !== undefined) counts.set(key, (counts.get(key) ?? 0) + 1);
  return keys.map((key) => (key !== undefined && counts.get(key) === 1 ? key : undefined));
}

function keyOf(path: readonly string[], part?: number): string {
  return part === undefined ? JSON.stringify(path) : `${JSON.stringify(path)}#${part}`;
}

/** `spec.template.spec.containers[name=web].image`: a line's path as people read it. */
export function pathText(path: readonly string[]): string {
  return path
    .map((segment, index) => (segment.startsWith('[') || index === 0 ? segment : `.${segment}`))
    .join('');
}

/**
 * Where a line path leads in `object`: its JSON Pointer and the value there; undefined when a field or
 * an item it names is not there.
 */
export function resolveLinePath(
  object: JsonValue,
  path: readonly string[],
): { pointer: string; value: JsonValue } | undefined {
  const segments: (string | number)[] = [];
  let at: JsonValue | undefined = object;
  for (const segment of path) {
    if (Array.isArray(at)) {
      const id = segment.slice(1, -1);
      const items: JsonValue[] = at;
      const index = id.startsWith('#')
        ? Number(id.slice(1))
        : items.findIndex((item) => listItemKey(item) === id);
      if (index < 0 || index >= items.length) return undefined;
      segments.push(index);
      at = items[index];
    } else {
      if (!isJsonObject(at) || !Object.hasOwn(at, segment)) return undefined;
      segments.push(segment);
      at = at[segment];
    }
  }
  return at === undefined ? undefined : { pointer: formatPointer(segments), value: at };
}
