// Leak checks: secret values that must never appear in any output of kubediff (stdout, logs, sinks, files).
//
// Every secret value a test generates (secretValue) is a chain of short pieces, each starting with the same
// canary, CANARY, followed by an id and a filler (unicode, '/', '~', quotes, newlines, base64-looking text).
// So the value itself, any run of it as long as two canaries, an id and a filler, its base64, or any long enough run of its
// base64, contains the canary or one of the three base64 forms of the canary (one per alignment of the
// canary in a 3-byte group). Searching an output for those four fixed needles is one pass each, however
// many secrets a corpus holds and however big they are; the id after a raw hit names the value that leaked.
//
// Sources: every output path is a LeakSource (a name, how to read it, and what proves it was exercised, so
// that an empty or missing output cannot pass for a clean one). A new output path (a sink, a UI, a file)
// is one more source in the lists the leak tests build:
//
//   await assertNoLeaks([
//     { name: 'stdout', read: () => kd.stdout, expect: /<redacted/ },
//     fileSource('dead letters', deadLetterPath, /<redacted/),
//     receiverSource('webhook', receiver, /<redacted/),
//   ]);

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import type { HttpReceiver } from './http-receiver.ts';

/** ASCII letters only: JSON and terminal escaping leave it as it is, and no hash marker can contain it. */
export const CANARY = 'KdLeakCanary';
const ID_LENGTH = 6;
/**
 * What values are made of between canaries: what tends to break escaping, paths and encodings; at most 8
 * UTF-16 code units each.
 */
const FILLERS: readonly string[] = [
  '',
  '/',
  '~',
  '~1/~0',
  'a/b~c',
  'ünïcødé',
  '🔑密码',
  '\u202e\u0085',
  '"\\',
  '\n',
  ' \t',
  'c2VjcmV0',
  '==',
  '<>&',
  '$$X',
];

const ID_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789';

/**
 * A secret value of at least `length` characters (at least one piece), made of pieces
 * `${CANARY}${id}${filler}`; the id identifies the value (the same id for all its pieces).
 */
export function secretValue(random: () => number, length: number): string {
  let id = '';
  for (let i = 0; i < ID_LENGTH; i++) id += ID_CHARS[Math.floor(random() * ID_CHARS.length)];
  const pieces: string[] = [];
  let size = 0;
  do {
    const filler = FILLERS[Math.floor(random() * FILLERS.length)]!;
    const piece = `${CANARY}${id}${filler}`;
    pieces.push(piece);
    size += piece.length;
  } while (size < length);
  return pieces.join('');
}

/**
 * What configured credentials are made of between canaries: what a header value, a URL's path segment or
 * query value, and a password may hold (visible ASCII; no '/' or '\\', which a URL takes for a separator).
 */
const CREDENTIAL_FILLERS: readonly string[] = [
  '',
  '-',
  '_',
  '.',
  '~',
  '+',
  '=',
  '==',
  ':',
  '@',
  '!$*',
  '"',
  "'",
  '%41',
  'c2VjcmV0',
];

/**
 * A credential (a token, a password, a key, a webhook URL's secret part) of at least `length` characters,
 * made like secretValue's values, of characters a header or a URL can carry: its canary finds it, or its
 * base64, wherever it leaks.
 */
export function credentialValue(random: () => number, length: number): string {
  let id = '';
  for (let i = 0; i < ID_LENGTH; i++) id += ID_CHARS[Math.floor(random() * ID_CHARS.length)];
  let value = '';
  do value += `${CANARY}${id}${CREDENTIAL_FILLERS[Math.floor(random() * CREDENTIAL_FILLERS.length)]!}`;
  while (value.length < length);
  return value;
}

/** The base64 characters that encode the canary alone, for each alignment of it in a 3-byte group. */
function base64Forms(text: string): string[] {
  const bytes = Buffer.from(text, 'utf8');
  const forms: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    // Whole groups of 3 bytes that hold canary bytes only.
    const first = Math.ceil(offset / 3);
    const last = Math.floor((offset + bytes.length) / 3);
    forms.push(encoded.slice(first * 4, last * 4));
  }
  return forms;
}

const NEEDLES: readonly { form: string; text: string }[] = [
  { form: 'text', text: CANARY },
  ...base64Forms(CANARY).map((text) => ({ form: 'base64', text })),
  // base64url differs from base64 in two characters only; the canary's forms may hold them.
  ...base64Forms(CANARY)
    .map((text) => text.replaceAll('+', '-').replaceAll('/', '_'))
    .filter((text, index) => text !== base64Forms(CANARY)[index])
    .map((text) => ({ form: 'base64url', text })),
];

interface Leak {
  source: string;
  /** 'text' (the value or a run of it), 'base64' or 'base64url'. */
  form: string;
  offset: number;
  /** Up to 60 characters around the hit. */
  excerpt: string;
}

/** Every place `content` holds a secret value (or a run of one, or its base64). */
function findLeaks(source: string, content: string | Uint8Array): Leak[] {
  // Bytes as latin1: one character per byte, so the ASCII needles are found in UTF-8 and binary files alike.
  const text = typeof content === 'string' ? content : Buffer.from(content).toString('latin1');
  const leaks: Leak[] = [];
  for (const needle of NEEDLES) {
    for (let at = text.indexOf(needle.text); at >= 0; at = text.indexOf(needle.text, at + 1)) {
      leaks.push({
        source,
        form: needle.form,
        offset: at,
        excerpt: JSON.stringify(text.slice(Math.max(0, at - 20), at + 40)),
      });
      if (leaks.length >= 20) return leaks;
    }
  }
  return leaks;
}

/** One output path of kubediff, read at the end of a test. */
export interface LeakSource {
  name: string;
  read(): string | Uint8Array | undefined | Promise<string | Uint8Array | undefined>;
  /**
   * What proves the output was produced and exercised (e.g. /<redacted sha256:/); without it, an empty
   * output would pass as clean. Omit it only for outputs that may legitimately be empty (a WAL after a
   * checkpoint).
   */
  expect?: RegExp | string;
}

export interface LeakReport {
  /** Bytes (or characters) scanned per source. */
  scanned: Record<string, number>;
}

/** Reads every source, fails on the first leaks found (all of them listed) or on a source not exercised. */
export async function assertNoLeaks(sources: readonly LeakSource[]): Promise<LeakReport> {
  const scanned: Record<string, number> = {};
  const leaks: Leak[] = [];
  const idle: string[] = [];
  for (const source of sources) {
    const content = (await source.read()) ?? '';
    scanned[source.name] = content.length;
    leaks.push(...findLeaks(source.name, content));
    if (source.expect !== undefined) {
      const text = typeof content === 'string' ? content : Buffer.from(content).toString('utf8');
      const found =
        typeof source.expect === 'string' ? text.includes(source.expect) : source.expect.test(text);
      if (!found) idle.push(`${source.name} (${content.length} bytes, no ${String(source.expect)})`);
    }
  }
  assert.deepEqual(
    leaks.map((leak) => `${leak.source}: ${leak.form} at ${leak.offset}: ${leak.excerpt}`),
    [],
    'secret values leaked',
  );
  assert.deepEqual(idle, [], 'these outputs were not exercised, so they prove nothing');
  return { scanned };
}

/** A file (the dead-letter file, the state database and its -wal); absent reads as empty. */
export function fileSource(name: string, path: string, expect?: RegExp | string): LeakSource {
  return {
    name,
    read: () => (existsSync(path) ? readFileSync(path) : undefined),
    ...(expect !== undefined ? { expect } : {}),
  };
}

/** Every request a loopback receiver got (webhook and Slack payloads), headers and bodies. */
export function receiverSource(name: string, receiver: HttpReceiver, expect?: RegExp | string): LeakSource {
  return {
    name,
    read: () =>
      receiver.requests
        .map(
          (request) =>
            `${request.method} ${request.path}\n${JSON.stringify(request.headers)}\n${request.body}`,
        )
        .join('\n'),
    ...(expect !== undefined ? { expect } : {}),
  };
}
