// RFC 6901 JSON Pointers: the `path` of every change and the syntax of ignored paths.

/** Escapes one reference token: '~' first, so the '~' introduced for '/' is not escaped again. */
export function escapeSegment(segment: string | number): string {
  const text = String(segment);
  // Most Kubernetes keys need no escaping; skip the two replaces for them.
  if (!text.includes('~') && !text.includes('/')) return text;
  return text.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** ['metadata', 'labels', 'app.kubernetes.io/name'] → '/metadata/labels/app.kubernetes.io~1name'; [] → ''. */
export function formatPointer(segments: readonly (string | number)[]): string {
  let pointer = '';
  for (const segment of segments) pointer += `/${escapeSegment(segment)}`;
  return pointer;
}

/** Why `text` is not a JSON Pointer, a phrase ("not a JSON Pointer: …"); undefined when it is one ('' too). */
export function pointerProblem(text: string): string | undefined {
  if (text === '') return undefined;
  if (!text.startsWith('/')) return `not a JSON Pointer: it must start with "/" (for example /${text})`;
  // Every '~' must start '~0' or '~1'.
  if (text.includes('~') && /~(?![01])/.test(text))
    return 'not a JSON Pointer: "~" must be followed by 0 or 1 (write ~0 for "~" and ~1 for "/")';
  return undefined;
}

/**
 * '/metadata/labels/app.kubernetes.io~1name' → ['metadata', 'labels', 'app.kubernetes.io/name'];
 * '' (the whole document) → []. Throws one readable sentence for anything that is not a pointer.
 */
export function parsePointer(text: string): string[] {
  const problem = pointerProblem(text);
  if (problem !== undefined) throw new Error(`${JSON.stringify(text)} is ${problem}`);
  if (text === '') return [];
  const tokens = text.slice(1).split('/');
  // Most paths escape nothing: no second pass over their tokens.
  return text.includes('~') ? tokens.map(unescapeSegment) : tokens;
}

function unescapeSegment(token: string): string {
  if (!token.includes('~')) return token;
  // RFC 6901 §4: '~1' before '~0', so '~01' becomes '~1' and not '/'.
  return token.replaceAll('~1', '/').replaceAll('~0', '~');
}
