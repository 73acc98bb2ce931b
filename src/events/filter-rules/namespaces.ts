// `namespaces` and `excludeNamespaces`: names or globs (`team-*`). Only a Namespace whose own name is
// listed passes `namespaces` among cluster-scoped objects; `excludeNamespaces` leaves them alone.

import { globMatcher, namespaceProblem } from '../../util/glob.ts';
import { listed, type NamePattern, nonEmpty, type Rule, reject } from './rule.ts';

export function namespacesRule(texts: readonly string[] | undefined): Rule | undefined {
  const namespaces = nonEmpty(texts)?.map(compileNamespace);
  if (!namespaces) return undefined;
  return (candidate) => {
    const { namespace, kind, name } = candidate.event.object;
    if (namespace === undefined) {
      const listedItself =
        kind === 'Namespace' ? namespaces.find((pattern) => pattern.test(name)) : undefined;
      if (!listedItself) {
        return reject(
          'namespaces',
          candidate,
          () => `${kind} ${name} is cluster-scoped and the filter lists namespaces ${listed(namespaces)}`,
        );
      }
      candidate.accepted?.push(`namespace ${name} itself`);
      return undefined;
    }
    const match = namespaces.find((pattern) => pattern.test(namespace));
    if (!match) {
      return reject('namespaces', candidate, () => `namespace ${namespace} is not in ${listed(namespaces)}`);
    }
    candidate.accepted?.push(
      match.text === namespace ? `namespace ${namespace}` : `namespace ${namespace} (${match.text})`,
    );
    return undefined;
  };
}

export function excludeNamespacesRule(texts: readonly string[] | undefined): Rule | undefined {
  const excluded = nonEmpty(texts)?.map(compileNamespace);
  if (!excluded) return undefined;
  return (candidate) => {
    const { namespace } = candidate.event.object;
    if (namespace === undefined) return undefined;
    const match = excluded.find((pattern) => pattern.test(namespace));
    if (!match) return undefined;
    return reject('excludeNamespaces', candidate, () => `namespace ${namespace} is excluded (${match.text})`);
  };
}

function compileNamespace(text: string): NamePattern {
  const trimmed = text.trim();
  const problem = namespaceProblem(trimmed);
  if (problem) throw new Error(`${JSON.stringify(text)} is ${problem}`);
  return { text: trimmed, test: globMatcher(trimmed) };
}
