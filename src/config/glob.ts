// Shell-style globs for namespace names: `*` is any run of characters, `?` one character.

export function hasGlob(text: string): boolean {
  return text.includes('*') || text.includes('?');
}

export function globToRegExp(glob: string): RegExp {
  let source = '';
  for (const char of glob) {
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else source += char.replace(/[.+^${}()|[\]\\-]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}
