// Webhook signatures: `X-Kubediff-Signature: t=<unix seconds>,v1=<hex>`,
// where hex is HMAC-SHA256(secret, "<t>.<body>"). The timestamp is signed
// with the body, so a receiver can both verify the origin and reject a
// replayed request (a `t` older than a few minutes). Each retry is signed
// anew with its own time; the body (and so the event id) stays the same.
import { createHmac, timingSafeEqual } from 'node:crypto';

export function signatureFor(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

export interface VerifyOptions {
  /** Reject signatures older (or further in the future) than this. Default 300 s. */
  toleranceSeconds?: number;
  nowSeconds?: number;
}

/** What a receiver does (see docs/sinks.md): true when `header` signs `body` with `secret` recently enough. */
export function verifySignature(
  secret: string,
  header: string | undefined,
  body: string,
  options: VerifyOptions = {},
): boolean {
  if (!header) return false;
  const fields = new Map<string, string[]>();
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    fields.set(key, [...(fields.get(key) ?? []), part.slice(eq + 1).trim()]);
  }
  const t = Number(fields.get('t')?.[0]);
  if (!Number.isInteger(t)) return false;
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (options.toleranceSeconds ?? 300)) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.${body}`).digest('hex'));
  // Several v1 values may be present while a secret is rotated; any one may match.
  return (fields.get('v1') ?? []).some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
