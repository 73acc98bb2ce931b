// The head of an AdmissionReview's body: its kind, its apiVersion and its request's uid, read from the
// body's first bytes without parsing the rest. That is all the answer needs, and the API server writes
// them first (Go's encoding of an AdmissionReview: kind and apiVersion, then the request, whose first field
// is its uid), so that a large review is answered at once and its object parsed later, in another thread
// (admission-thread.ts). A body whose head is not within the first `maxBytes`, or is not an
// admission.k8s.io/v1 AdmissionReview with a uid, has none: it is parsed whole before it is answered.
//
// The scan reads JSON as JSON.parse does (strings with their escapes, nested values skipped), but stops
// at the uid: whatever follows is not checked here. Where a body names its uid twice, the parse that
// follows takes the last one; admission-server.ts then drops the review (its answer named the first).

export interface ReviewHead {
  apiVersion: string;
  requestUID: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Thrown inside the scan when the head is not there; reviewHeadOf() answers undefined. */
class NoHead extends Error {}

class Scanner {
  readonly #body: Buffer;
  readonly #end: number;
  at = 0;

  constructor(body: Buffer, maxBytes: number) {
    this.#body = body;
    this.#end = Math.min(body.length, maxBytes);
  }

  /** The next byte that is not JSON whitespace (its position is `at`). */
  peek(): number {
    while (this.at < this.#end) {
      const byte = this.#body[this.at] as number;
      if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) return byte;
      this.at++;
    }
    throw new NoHead();
  }

  expect(byte: number): void {
    if (this.peek() !== byte) throw new NoHead();
    this.at++;
  }

  /** A JSON string, decoded. */
  string(): string {
    this.expect(QUOTE);
    const start = this.at - 1;
    let escaped = false;
    while (this.at < this.#end) {
      const byte = this.#body[this.at++] as number;
      if (byte === BACKSLASH) escaped = true;
      else if (byte === QUOTE) {
        const text = this.#body.toString('utf8', start, this.at);
        if (!escaped) return text.slice(1, -1);
        try {
          return JSON.parse(text) as string;
        } catch {
          throw new NoHead();
        }
      }
      if (byte === BACKSLASH) this.at++;
    }
    throw new NoHead();
  }

  /** Past one value of any kind, unchecked within. */
  skip(): void {
    const first = this.peek();
    if (first === QUOTE) {
      this.string();
      return;
    }
    if (first !== OPEN_OBJECT && first !== OPEN_ARRAY) {
      // A number, true, false or null: up to what ends it.
      while (this.at < this.#end) {
        const byte = this.#body[this.at] as number;
        if (byte === COMMA || byte === CLOSE_OBJECT || byte === CLOSE_ARRAY || byte <= 0x20) return;
        this.at++;
      }
      throw new NoHead();
    }
    let depth = 0;
    while (this.at < this.#end) {
      const byte = this.#body[this.at] as number;
      if (byte === QUOTE) {
        this.string();
        continue;
      }
      this.at++;
      if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) depth++;
      else if ((byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) && --depth === 0) return;
    }
    throw new NoHead();
  }

  /** The members of an object, each value read (or skipped) by `member`, until it answers true. */
  members(member: (key: string) => boolean): boolean {
    this.expect(OPEN_OBJECT);
    if (this.peek() === CLOSE_OBJECT) return false;
    for (;;) {
      const key = this.string();
      this.expect(COLON);
      if (member(key)) return true;
      const next = this.peek();
      this.at++;
      if (next === CLOSE_OBJECT) return false;
      if (next !== COMMA) throw new NoHead();
    }
  }
}

/** The head of `body` within its first `maxBytes`, or undefined. */
export function reviewHeadOf(body: Buffer, maxBytes: number): ReviewHead | undefined {
  const scanner = new Scanner(body, maxBytes);
  let kind: string | undefined;
  let apiVersion: string | undefined;
  let requestUID: string | undefined;
  /** A string value, or undefined (skipped) for a value of another type. */
  const text = (): string | undefined => {
    if (scanner.peek() === QUOTE) return scanner.string();
    scanner.skip();
    return undefined;
  };
  try {
    // Stops at the request's uid: the head ends there (kind and apiVersion come before it, or not at all).
    scanner.members((key) => {
      if (key === 'kind') kind = text();
      else if (key === 'apiVersion') apiVersion = text();
      else if (key === 'request' && scanner.peek() === OPEN_OBJECT) {
        return scanner.members((field) => {
          if (field !== 'uid') {
            scanner.skip();
            return false;
          }
          requestUID = text();
          return true;
        });
      } else scanner.skip();
      return false;
    });
  } catch (error) {
    if (error instanceof NoHead) return undefined;
    throw error;
  }
  if (kind !== 'AdmissionReview' || apiVersion !== 'admission.k8s.io/v1') return undefined;
  if (requestUID === undefined || requestUID === '' || requestUID.length > 128) return undefined;
  return { apiVersion, requestUID };
}
