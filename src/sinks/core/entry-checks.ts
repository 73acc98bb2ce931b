// The checks a sink type's `sinks:` entry shares with others (src/util/key-checks.ts): a receiver's URL,
// its header names, a client certificate's pair of files. Each type lists its own in its folder.
import { isJsonObject } from '../../kube/types.ts';
import type { Check } from '../../util/key-checks.ts';
import { isHeaderName, isReservedHeader } from './receiver-checks.ts';
import { httpUrlProblem } from './receiver-settings.ts';

/** A receiver's http(s) URL (httpUrlProblem); `credentials`: where they go instead. */
export function httpUrl(credentials?: string): Check {
  return (value, path, { at, shown }) => {
    if (typeof value !== 'string') return;
    const problem = httpUrlProblem(value, shown(path, value), credentials);
    if (problem) at(path, problem);
  };
}

export const url = httpUrl();

export const headerNames: Check = (headers, path, { at }) => {
  for (const name of isJsonObject(headers) ? Object.keys(headers) : []) {
    if (!isHeaderName(name)) at([...path, name], `${JSON.stringify(name)} is not an HTTP header name`);
    else if (isReservedHeader(name)) at([...path, name], `kubediff sets ${name} itself`);
  }
};

export const clientCertificate: Check = (tls, path, { at }) => {
  if (isJsonObject(tls) && (tls.certFile === undefined) !== (tls.keyFile === undefined))
    at(path, 'a client certificate needs both certFile and keyFile');
};
