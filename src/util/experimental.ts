// Node's experimental APIs that kubediff relies on (node:sqlite, module.stripTypeScriptTypes) print an
// ExperimentalWarning on first use on some Node releases: a user sees it as a problem, but it is
// expected. It is silenced for that one load; every other warning still passes.

/** Runs `load` with ExperimentalWarnings whose text matches `feature` silenced. */
export function withoutExperimentalWarning<T>(feature: RegExp, load: () => T): T {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
    const name = typeof warning === 'string' ? type : warning.name;
    if (name === 'ExperimentalWarning' && feature.test(text)) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return load();
  } finally {
    process.emitWarning = emitWarning;
  }
}
