// Path patterns: the ignored paths (subtrees kubediff neither stores nor diffs, see PRODUCT.md, "Default
// ignored paths") and the `redact:` paths of the config file (subtrees replaced by a hash).

import { parsePointer } from './pointer.ts';

/** What every watch ignores unless told otherwise; `--status` brings /status back. */
export const DEFAULT_IGNORED_PATHS: readonly string[] = [
  '/metadata/managedFields',
  '/metadata/resourceVersion',
  '/metadata/generation',
  '/status',
];

/** A segment that matches any single key or index, e.g. /spec/template/spec/containers/x/image with '*' for x. */
const WILDCARD = '*';

/** One node of the pattern trie; `end` marks the end of a pattern. */
interface PatternNode {
  end: boolean;
  readonly literal: Map<string, PatternNode>;
  wildcard: PatternNode | undefined;
}

/**
 * Where a walk over an object stands: the pattern nodes its current path has reached.
 * Empty means no pattern can match anywhere below, so a walker may stop looking.
 */
export type MatchCursor = readonly PatternNode[];

const NOTHING_BELOW: MatchCursor = [];

/**
 * Decides whether a path is matched (ignored, or redacted): a pattern matches its own path and
 * everything below it.
 * Patterns are compiled once into a trie of segments, so a lookup is a walk down the trie with no
 * string building or regex per call: it runs on every object kubediff stores.
 */
export class PathMatcher {
  readonly #root: PatternNode = newNode();
  readonly #isEmpty: boolean;
  /** The patterns it was made of: another thread makes the same matcher from them. */
  readonly patterns: readonly string[];

  /** Throws a one-sentence Error for a pattern that is not a JSON Pointer or that would ignore everything. */
  constructor(patterns: readonly string[]) {
    this.patterns = [...patterns];
    for (const pattern of patterns) {
      const segments = parsePointer(pattern);
      if (segments.length === 0) {
        throw new Error('"" cannot be ignored: it is the whole object; name a path such as /status');
      }
      let node = this.#root;
      for (const segment of segments) {
        node = segment === WILDCARD ? wildcardChild(node) : literalChild(node, segment);
      }
      node.end = true;
    }
    this.#isEmpty = patterns.length === 0;
  }

  get isEmpty(): boolean {
    return this.#isEmpty;
  }

  /** Is this path, or one of its ancestors, matched? */
  matches(segments: readonly string[]): boolean {
    return matchesFrom(this.#root, segments, 0);
  }

  /** The cursor at the root of an object, for walkers that descend key by key (see step()). */
  start(): MatchCursor {
    return this.#isEmpty ? NOTHING_BELOW : [this.#root];
  }

  /**
   * Descends from `cursor` into the key or index `segment`: 'matched' if that subtree is matched,
   * otherwise the cursor of the subtree (empty when nothing below it can be matched). Only ever
   * called for paths whose ancestors were not matched, so reaching a pattern's end means matched.
   */
  step(cursor: MatchCursor, segment: string): MatchCursor | 'matched' {
    if (cursor.length === 0) return NOTHING_BELOW;
    // Allocated only when a pattern continues below this segment, which is rare.
    let next: PatternNode[] | undefined;
    for (const node of cursor) {
      const literal = node.literal.get(segment);
      const wildcard = node.wildcard;
      if (literal?.end || wildcard?.end) return 'matched';
      if (literal === undefined && wildcard === undefined) continue;
      next = next ?? [];
      if (literal) next.push(literal);
      if (wildcard) next.push(wildcard);
    }
    return next ?? NOTHING_BELOW;
  }
}

function newNode(): PatternNode {
  return { end: false, literal: new Map(), wildcard: undefined };
}

function literalChild(node: PatternNode, segment: string): PatternNode {
  let child = node.literal.get(segment);
  if (!child) {
    child = newNode();
    node.literal.set(segment, child);
  }
  return child;
}

function wildcardChild(node: PatternNode): PatternNode {
  node.wildcard = node.wildcard ?? newNode();
  return node.wildcard;
}

function matchesFrom(node: PatternNode, segments: readonly string[], index: number): boolean {
  if (node.end) return true;
  const segment = segments[index];
  if (segment === undefined) return false;
  const literal = node.literal.get(segment);
  if (literal && matchesFrom(literal, segments, index + 1)) return true;
  return node.wildcard !== undefined && matchesFrom(node.wildcard, segments, index + 1);
}
