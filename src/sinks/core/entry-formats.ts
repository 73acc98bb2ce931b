// The formats (util/value-format.ts) of the keys sink entries share: a receiver's http(s) URL, whose
// message says where credentials go instead of `user:password@` in the entry of each type.
import { shownUrl } from '../../util/url.ts';
import type { ValueFormat } from '../../util/value-format.ts';
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
