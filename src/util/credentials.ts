// The credentials kubediff is configured with, and the one way they are kept out of what it writes (logs,
// dead letters, metrics, the UI; docs/security.md, "Credentials"): a Credentials holds each value in every
// form kubediff sends it or a receiver may echo (as it is, JSON-escaped, URL-encoded, base64 variants; a
// header word by word and Basic/ApiKey decoded; a URL's password, path segments and query values that are
// not plain words), and scrub() replaces every form in a text with CREDENTIAL_MARK. Each user is given its
// Credentials, never a global: the logger, dead-letter records, sinks' names, a sink's HTTP answers before
// they are quoted or cut, a watch's fatal error.
import { escapeRegExp } from './glob.ts';
import type { LogFields, Logger } from './log.ts';

/** What a credential is replaced by. */
export const CREDENTIAL_MARK = '<credential>';

/**
 * Values (and forms) shorter than this are not searched for: they cannot be told from ordinary words
 * ("prod", a header value of "1"), and replacing them would garble every message. docs/security.md says so.
 */
export const MIN_CREDENTIAL_LENGTH = 6;

export type Credential =
  /** A token, password, key or secret, sent as it is (a SASL password, a bot token). */
  | { kind: 'secret'; value: string }
  /** A header value kubediff sends: `Bearer <token>`, `Basic <base64>`, `ApiKey <key>`, or a bare key. */
  | { kind: 'header'; value: string }
  /** HTTP basic authentication: sent as base64 of user:password. */
  | { kind: 'basic'; user: string; password: string }
  /** A URL whose path or query holds a secret (a chat platform's webhook URL). */
  | { kind: 'url'; value: string };

/** The secrets among `values` that are set (a token, a password, a client key). */
export function secretCredentials(...values: (string | undefined)[]): Credential[] {
  return values.flatMap((value) => (value ? [{ kind: 'secret', value } as const] : []));
}

/** Every header value a sink sends (from `headers:`, a headers file, the environment). */
export function headerCredentials(headers: Readonly<Record<string, string>> | undefined): Credential[] {
  return Object.values(headers ?? {}).map((value) => ({ kind: 'header', value }) as const);
}

export class Credentials {
  /** No credential: scrub() returns its text as it is. */
  static readonly none = new Credentials([]);

  /** Every form searched for, longest first (a form inside a longer one is replaced with it). */
  private readonly forms: readonly string[];
  private readonly pattern: RegExp | undefined;

  private constructor(forms: Iterable<string>) {
    this.forms = [...new Set(forms)]
      .filter((form) => form.length >= MIN_CREDENTIAL_LENGTH)
      .sort((a, b) => b.length - a.length);
    this.pattern =
      this.forms.length === 0 ? undefined : new RegExp(this.forms.map(escapeRegExp).join('|'), 'g');
  }

  static of(credentials: readonly Credential[]): Credentials {
    const forms: string[] = [];
    for (const credential of credentials) forms.push(...formsOf(credential));
    return new Credentials(forms);
  }

  /** These and `others`' credentials together. */
  union(...others: readonly Credentials[]): Credentials {
    return new Credentials([this, ...others].flatMap((credentials) => credentials.forms));
  }

  get empty(): boolean {
    return this.pattern === undefined;
  }

  /** `text` with every form of every credential replaced by CREDENTIAL_MARK. */
  scrub(text: string): string {
    if (!this.pattern || text.length < MIN_CREDENTIAL_LENGTH) return text;
    return text.replace(this.pattern, CREDENTIAL_MARK);
  }
}

/** A logger that scrubs each message, and each text field, before `log` writes it. */
export function scrubbingLogger<L extends Logger>(log: L, credentials: Credentials): L {
  if (credentials.empty) return log;
  const fieldsOf = (fields: LogFields | undefined): LogFields | undefined => {
    if (!fields) return fields;
    const scrubbed: LogFields = {};
    for (const [key, value] of Object.entries(fields))
      scrubbed[key] = typeof value === 'string' ? credentials.scrub(value) : value;
    return scrubbed;
  };
  // A copy with each level's method wrapped (a StderrLogger's `error` and `format` included).
  const scrubbed: Record<string, unknown> = { ...(log as object) };
  for (const level of ['info', 'warn', 'debug', 'error']) {
    const write = (log as unknown as Record<string, unknown>)[level];
    if (typeof write !== 'function') continue;
    scrubbed[level] = (message: string, fields?: LogFields) =>
      (write as Logger['info']).call(log, credentials.scrub(message), fieldsOf(fields));
  }
  return scrubbed as unknown as L;
}

/** Every form of one credential that may be sent or echoed (those too short are dropped later). */
function formsOf(credential: Credential): string[] {
  switch (credential.kind) {
    case 'secret':
      return encodings(credential.value);
    case 'basic':
      return [...encodings(credential.password), ...encodings(`${credential.user}:${credential.password}`)];
    case 'header':
      return headerForms(credential.value);
    case 'url':
      return urlForms(credential.value);
  }
}

/**
 * The value as it is, JSON-escaped, URL-encoded, and in base64 (standard, URL-safe; padding or not).
 * None for a value shorter than MIN_CREDENTIAL_LENGTH: its base64 would be long enough, and as common.
 */
function encodings(value: string): string[] {
  if (value.length < MIN_CREDENTIAL_LENGTH) return [];
  const base64 = Buffer.from(value, 'utf8').toString('base64');
  return [
    value,
    JSON.stringify(value).slice(1, -1),
    encodeURIComponent(value),
    encodeURI(value),
    encodeURIComponent(value).replaceAll('%20', '+'),
    base64,
    base64.replace(/=+$/, ''),
    Buffer.from(value, 'utf8').toString('base64url'),
  ];
}

/**
 * A header value whole, each of its words (`Bearer <token>`: the token), and what a `Basic` or `ApiKey`
 * credential's base64 stands for (user:password and the password; id:key and the key).
 */
function headerForms(value: string): string[] {
  const forms = encodings(value.trim());
  const words = value.trim().split(/\s+/);
  // The scheme (Bearer, Basic, ApiKey, Token…) is a word of every such header, not a credential.
  const schemed = words.length > 1 && /^[A-Za-z-]+$/.test(words[0] as string);
  for (const word of schemed ? words.slice(1) : words) forms.push(...encodings(word));
  const scheme = words[0]?.toLowerCase();
  if (words.length === 2 && (scheme === 'basic' || scheme === 'apikey')) {
    const decoded = decodedText(words[1] as string);
    if (decoded !== undefined) {
      forms.push(...encodings(decoded));
      const colon = decoded.indexOf(':');
      if (colon >= 0) forms.push(...encodings(decoded.slice(colon + 1)));
    }
  }
  return forms;
}

/** What a base64 text stands for, when it is printable text (else undefined). */
function decodedText(base64: string): string | undefined {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(base64)) return undefined;
  const text = Buffer.from(base64, 'base64').toString('utf8');
  return /^[\x20-\x7e]+$/.test(text) ? text : undefined;
}

/** A plain word in a URL's path ("services", "webhooks", "v1"): not a secret, and too common to replace. */
const PLAIN_WORD = /^[a-z][a-z0-9-]*$/;

/**
 * A URL's secret parts: its password, its path and query whole, each path segment and query value that
 * is not a plain word, as they appear in the URL (percent-encoded) and decoded.
 */
function urlForms(text: string): string[] {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return encodings(text);
  }
  const parts: string[] = [];
  if (url.password) parts.push(url.password, decodeURIComponent(url.password));
  const segments = url.pathname.split('/').filter((segment) => segment !== '' && !PLAIN_WORD.test(segment));
  for (const segment of segments) parts.push(segment, safeDecode(segment));
  for (const [, value] of url.searchParams) if (!PLAIN_WORD.test(value)) parts.push(value);
  for (const raw of url.search.slice(1).split('&')) {
    const value = raw.slice(raw.indexOf('=') + 1);
    if (value && !PLAIN_WORD.test(value)) parts.push(value);
  }
  const forms = parts.flatMap(encodings);
  if (segments.length > 0 || url.search !== '') forms.push(`${url.pathname}${url.search}`, url.href);
  return forms;
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
