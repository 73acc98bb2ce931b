// The check a sink type's `sinks:` entry shares with others (src/util/key-checks.ts): the names of its
// headers (keys, which no format states). Its values' rules are formats (entry-formats.ts).
import { isJsonObject } from '../../kube/types.ts';
import type { Check } from '../../util/key-checks.ts';
import { isHeaderName, isReservedHeader } from './receiver-checks.ts';

export const headerNames: Check = (headers, path, { at }) => {
  for (const name of isJsonObject(headers) ? Object.keys(headers) : []) {
    if (!isHeaderName(name)) at([...path, name], `${JSON.stringify(name)} is not an HTTP header name`);
    else if (isReservedHeader(name)) at([...path, name], `kubediff sets ${name} itself`);
  }
};
