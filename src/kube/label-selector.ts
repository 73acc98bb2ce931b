// Checks a label selector's syntax before any request is made, so a typo is
// one clear message instead of a 400 from every resource type.

const KEY = `(?:[a-z0-9A-Z](?:[a-z0-9A-Z._-]{0,251}[a-z0-9A-Z])?/)?[a-z0-9A-Z](?:[a-z0-9A-Z._-]{0,61}[a-z0-9A-Z])?`;
const VALUE = `(?:[a-z0-9A-Z](?:[a-z0-9A-Z._-]{0,61}[a-z0-9A-Z])?)?`;
const TERMS = [
  new RegExp(`^!?${KEY}$`),
  new RegExp(`^${KEY}\\s*(?:=|==|!=)\\s*${VALUE}$`),
  new RegExp(`^${KEY}\\s+(?:in|notin)\\s+\\(\\s*${VALUE}(?:\\s*,\\s*${VALUE})*\\s*\\)$`),
];

/** Returns why `selector` is invalid, or undefined when it is valid. */
export function labelSelectorProblem(selector: string): string | undefined {
  if (selector.trim() === '') return 'it is empty';
  for (const term of splitTerms(selector)) {
    const trimmed = term.trim();
    if (!TERMS.some((pattern) => pattern.test(trimmed))) {
      return `"${trimmed}" is not a valid requirement (use key, !key, key=value, key!=value, key in (a,b) or key notin (a,b))`;
    }
  }
  return undefined;
}

/** Splits on the commas that separate requirements, not those inside `in (a,b)`. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < selector.length; index++) {
    const char = selector[index];
    if (char === '(') depth++;
    else if (char === ')') depth--;
    else if (char === ',' && depth === 0) {
      terms.push(selector.slice(start, index));
      start = index + 1;
    }
  }
  terms.push(selector.slice(start));
  return terms;
}
