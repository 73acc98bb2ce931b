// Receiver URLs (webhooks, chat platforms): one check of what is acceptable, and how they are shown. A receiver's
// URL is a credential (a chat platform's webhook URL is one): logs, errors and names show its scheme and host
// only, the path elided.

export type HttpUrl = { url: URL; problem?: undefined } | { url?: undefined; problem: UrlProblem };

/**
 * Why a text is not a receiver's http(s) URL: not a URL at all, another scheme (`ftp:`), or credentials
 * in it (`user:password@`), which the HTTP client never sends (a request carries the origin and path).
 */
type UrlProblem = { kind: 'not-a-url' } | { kind: 'scheme'; url: URL } | { kind: 'credentials' };

/** An http:// or https:// URL without credentials, or what is wrong with `text`. */
export function parseHttpUrl(text: string): HttpUrl {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { problem: { kind: 'not-a-url' } };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { problem: { kind: 'scheme', url } };
  if (url.username !== '' || url.password !== '') return { problem: { kind: 'credentials' } };
  return { url };
}

/** The part of a URL that may be shown: what comes before the first '/', at most 40 characters. */
export function urlStart(text: string): string {
  return (text.split('/')[0] ?? '').slice(0, 40);
}

/** A URL as a message may show it, quoted: what comes before its first '/', then '/…' if more follows. */
export function shownUrl(text: string): string {
  return JSON.stringify(`${urlStart(text)}${text.includes('/') ? '/…' : ''}`);
}

/** 'https://hooks.example.com/…': scheme and host (and port) only. */
export function redactUrl(url: string | URL): string {
  try {
    const parsed = typeof url === 'string' ? new URL(url) : url;
    const hidden = parsed.pathname.length > 1 || parsed.search !== '' || parsed.hash !== '';
    return `${parsed.protocol}//${parsed.host}${hidden ? '/…' : '/'}`;
  } catch {
    return '(an invalid URL)';
  }
}

/** Replaces the URL (and its path and credentials) wherever they appear in `text`. */
export function scrubUrl(text: string, url: URL): string {
  let out = text;
  const secrets = [
    url.href,
    `${url.pathname}${url.search}`,
    url.pathname,
    url.search,
    url.username,
    url.password,
  ];
  for (const secret of secrets) {
    if (secret && secret.length > 1)
      out = out.split(secret).join(secret === url.href ? redactUrl(url) : '/…');
  }
  return out;
}

/**
 * Why `text` is not a Kafka broker address (host:port, an IPv6 host in brackets), or undefined when it is.
 * The one check of broker addresses, for flags and the config file.
 */
export function kafkaBrokerProblem(text: string): string | undefined {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$/.exec(text);
  const port = Number(match?.[2]);
  if (!match || port < 1 || port > 65535) return 'expected host:port';
  return undefined;
}
