// The formats (util/value-format.ts) of the keys sink entries share: a receiver's http(s) URL, whose
// message says where credentials go instead of `user:password@` in the entry of each type, and the names
// of its headers.
import { shownUrl } from '../../util/url.ts';
import type { ValueFormat } from '../../util/value-format.ts';
import { isHeaderName, isReservedHeader } from './receiver-checks.ts';
import { httpUrlProblem } from './receiver-settings.ts';

/** A receiver's http(s) URL without credentials in it; `credentials`: where they go instead. */
export function httpUrlFormat(name: string, credentials?: string): ValueFormat {
  return {
    name,
    problem: (value) => httpUrlProblem(value, shownUrl(value), credentials),
    // The file's message quotes the URL as the file may show it (never whole: its path may be a secret).
    inFile: (_problem, { value, shown }) => httpUrlProblem(value, shown, credentials) ?? '',
  };
}

/** A URL of a receiver that takes no credentials beside it. */
export const HTTP_URL_FORMAT = httpUrlFormat('http-url');

/** A header's name (the schema's `propertyNames` of a map of headers): a token kubediff does not set itself. */
export const HEADER_NAME_FORMAT: ValueFormat = {
  name: 'header-name',
  problem: (name) =>
    !isHeaderName(name)
      ? `${JSON.stringify(name)} is not an HTTP header name`
      : isReservedHeader(name)
        ? `kubediff sets ${name} itself`
        : undefined,
  inFile: (problem) => problem,
};
