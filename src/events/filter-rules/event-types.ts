// `types`: only these event types.

import type { FilterEventType } from '../event.ts';
import { nonEmpty, type Rule, reject } from './rule.ts';

export function typesRule(types: readonly FilterEventType[] | undefined): Rule | undefined {
  if (!nonEmpty(types)) return undefined;
  const wanted: ReadonlySet<FilterEventType> = new Set(types);
  return (candidate) => {
    const { type } = candidate.event;
    if (!wanted.has(type))
      return reject('types', candidate, () => `type ${type} is not in [${[...wanted].join(', ')}]`);
    candidate.accepted?.push(`type ${type}`);
    return undefined;
  };
}
