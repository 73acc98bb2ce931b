// Which test servers a selection of test files needs (scripts/test-servers.ts starts them): those whose
// test/helpers module a file imports, directly or through other modules of the repository. Kept apart
// from the servers themselves, so that reading a selection's needs loads none of their harnesses.
import { globSync, readFileSync } from 'node:fs';
import path from 'node:path';

const repoRoot = path.resolve(import.meta.dirname, '..');

export interface ServerNeeds {
  postgres: boolean;
  kafka: boolean;
  /** The jars without the shared broker: a test that starts brokers of its own. */
  kafkaJars: boolean;
  opensearch: boolean;
  /** The node's files without the shared node: a test that starts nodes of its own. */
  opensearchHome: boolean;
  otelcol: boolean;
  /** The Collector binary without the shared Collector: a test that starts Collectors of its own. */
  otelcolBinary: boolean;
}

const helper = (name: string) => path.join(repoRoot, 'test', 'helpers', name);

/** Which servers the test files (paths or globs, relative to the repository) need. */
export function serverNeeds(patterns: string[]): ServerNeeds {
  const files = patterns
    .flatMap((pattern) => globSync(pattern, { cwd: repoRoot }))
    .map((file) => path.resolve(repoRoot, file));
  const reached = reachableModules(files);
  return {
    postgres: reached.has(helper('postgres-env.ts')),
    kafka: reached.has(helper('kafka-env.ts')),
    kafkaJars: reached.has(helper('kafka.ts')),
    opensearch: reached.has(helper('opensearch-env.ts')),
    opensearchHome: reached.has(helper('opensearch.ts')),
    otelcol: reached.has(helper('otelcol-env.ts')),
    otelcolBinary: reached.has(helper('otelcol.ts')),
  };
}

/**
 * Every module of the repository the files import at run time, themselves included: relative
 * imports, re-exports and dynamic imports, but not `import type` (erased before it runs).
 */
function reachableModules(files: string[]): Set<string> {
  const statement = /\b(?:import|export)\s+(type\s+)?[^;'"]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]/g;
  const bare = /\bimport\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g;
  const seen = new Set<string>();
  const queue = [...files];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue; // not a file of ours (a glob node --test will expand, or a missing file it will report)
    }
    const targets = [
      ...[...text.matchAll(statement)].filter((match) => !match[1]).map((match) => match[2]),
      ...[...text.matchAll(bare)].map((match) => match[1]),
    ];
    for (const target of targets) if (target) queue.push(path.resolve(path.dirname(file), target));
  }
  return seen;
}
