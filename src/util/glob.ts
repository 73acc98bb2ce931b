// Namespace names, and shell-style globs over them: `*` is any run of characters, `?` one character; and
// text matched literally inside a RegExp.

export function hasGlob(text: string): boolean {
  return text.includes('*') || text.includes('?');
}

export function globToRegExp(glob: string): RegExp {
  let source = '';
  for (const char of glob) {
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else source += escapeRegExp(char);
  }
  return new RegExp(`^${source}$`);
}

/** `text` as a RegExp source that matches it literally. */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A name or a glob over names, compiled once: an exact comparison when it has no `*` or `?`. */
export function globMatcher(glob: string): (text: string) => boolean {
  if (!hasGlob(glob)) return (text) => text === glob;
  const pattern = globToRegExp(glob);
  return (text) => pattern.test(text);
}

const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A glob over namespace names: `team-*`, `*-prod`, `ns-?`. */
const NAMESPACE_GLOB = /^[-a-z0-9*?]{1,63}$/;

/** A namespace name (`kube-system`) or a glob over them (`team-*`), as -n and `namespaces:` take them. */
function isNamespaceNameOrGlob(text: string): boolean {
  return hasGlob(text) ? NAMESPACE_GLOB.test(text) : NAMESPACE_NAME.test(text);
}

/** Why `text` is not a namespace name or glob, in a phrase ("not a namespace name: …"); undefined when it is one. */
export function namespaceProblem(text: string): string | undefined {
  if (isNamespaceNameOrGlob(text)) return undefined;
  return "not a namespace name: use lowercase letters, digits and '-' (globs: * and ?)";
}
