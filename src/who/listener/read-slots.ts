// The bodies a webhook listener reads at once (webhook-listener.ts), and which read gives its place when a
// request finds them all taken. The bound keeps what requests hold in memory to `limit` × the largest body;
// without a rule for giving places, whoever reaches the port could keep every read with bodies sent slowly,
// each finished before any deadline and followed by the next, and the API server's reviews would find the
// reads always taken. A request that finds every read taken takes the place of one, which is cut (408):
//
// 1. standing: a source (a remote address) in good standing takes the place of the oldest read of a source
//    that is not. A source is in good standing once a body it sent arrived promptly (within PROMPT_BODY_MS
//    of its headers) and was answered 200, as long as none of its bodies in the last STANDING_MS was slow,
//    cut or refused: the API server's bodies arrive in milliseconds, while a source holding reads has to
//    send slowly;
// 2. fair share: a source takes the place of the oldest read of the source holding the most reads, when that
//    one holds at least two more than it does (so one address, or two, cannot hold all of them), unless
//    that source is in good standing and it is not;
// 3. slow bodies: a read whose body has been arriving for `slowBodyMs` gives its place to anyone.
//
// Otherwise the request is refused (503). Sources are remembered by address, MAX_SOURCES at most (the one
// seen least recently is forgotten first).

/** A body that arrives within this of its headers is prompt; later, it counts against its source. */
export const PROMPT_BODY_MS = 250;
/** How long a slow, cut or refused body keeps its source out of good standing. */
export const STANDING_MS = 60_000;
/** Sources remembered for their standing. */
export const MAX_SOURCES = 1_024;

/** Why a read gave its place (its 408 says so). */
export type CutReason = 'standing' | 'share' | 'slow';

/** A read in progress. */
export interface ReadSlot {
  readonly source: string;
  /** Gives the read back once its body has arrived (or was cut, or the client went away); true if prompt. */
  end(): boolean;
}

interface Read {
  source: string;
  since: number;
  cut: (reason: CutReason) => void;
}

interface Standing {
  /** The last body that arrived promptly and was answered 200 (performance.now()). */
  good?: number;
  /** The last body that was slow, cut or refused. */
  bad?: number;
}

export class ReadSlots {
  readonly limit: number;
  readonly #slowBodyMs: number | undefined;
  readonly #now: () => number;
  /** Oldest first. */
  readonly #reads = new Map<symbol, Read>();
  /** Least recently seen first. */
  readonly #sources = new Map<string, Standing>();

  constructor(options: { limit: number; slowBodyMs?: number | undefined; now?: () => number }) {
    this.limit = options.limit;
    this.#slowBodyMs = options.slowBodyMs;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Reads in progress. */
  get reading(): number {
    return this.#reads.size;
  }

  /**
   * A read for a request from `source`: a free one, or the place of one that gives it (its `cut` is called
   * first, with the reason); undefined when none may be had (503). `cut` is how this read is ended if it
   * has to give its place in turn.
   */
  take(source: string, cut: (reason: CutReason) => void): ReadSlot | undefined {
    if (this.#reads.size >= this.limit) {
      const victim = this.#victim(source);
      if (!victim) return undefined;
      this.#reads.delete(victim.key);
      victim.read.cut(victim.reason);
    }
    const key = Symbol('read');
    const read: Read = { source, since: this.#now(), cut };
    this.#reads.set(key, read);
    let ended = false;
    return {
      source,
      end: () => {
        const prompt = this.#now() - read.since <= PROMPT_BODY_MS;
        if (!ended) {
          ended = true;
          this.#reads.delete(key);
        }
        return prompt;
      },
    };
  }

  /** What became of a body from `source`: answered 200 and prompt (good), or not. */
  judge(source: string, good: boolean): void {
    const standing = this.#sources.get(source) ?? {};
    this.#sources.delete(source);
    if (good) standing.good = this.#now();
    else standing.bad = this.#now();
    this.#sources.set(source, standing);
    if (this.#sources.size > MAX_SOURCES) this.#sources.delete(this.#sources.keys().next().value as string);
  }

  #inGoodStanding(source: string): boolean {
    const standing = this.#sources.get(source);
    if (standing?.good === undefined) return false;
    return standing.bad === undefined || this.#now() - standing.bad > STANDING_MS;
  }

  #victim(source: string): { key: symbol; read: Read; reason: CutReason } | undefined {
    const standing = this.#inGoodStanding(source);
    const held = new Map<string, number>();
    for (const read of this.#reads.values()) held.set(read.source, (held.get(read.source) ?? 0) + 1);
    const own = held.get(source) ?? 0;
    let most: string | undefined;
    for (const [other, count] of held) {
      if (other !== source && (most === undefined || count > (held.get(most) ?? 0))) most = other;
    }
    const shareTaken =
      most !== undefined && (held.get(most) ?? 0) >= own + 2 && (standing || !this.#inGoodStanding(most));
    const slowBodyMs = this.#slowBodyMs;
    const now = this.#now();
    // Oldest first: the first read that matches a rule is the one waiting longest under it.
    for (const reason of ['standing', 'share', 'slow'] as const) {
      for (const [key, read] of this.#reads) {
        // A source's own reads give their place to it only when they are slow.
        if (reason !== 'slow' && read.source === source) continue;
        const matches =
          reason === 'standing'
            ? standing && !this.#inGoodStanding(read.source)
            : reason === 'share'
              ? shareTaken && read.source === most
              : slowBodyMs !== undefined && now - read.since >= slowBodyMs;
        if (matches) return { key, read, reason };
      }
    }
    return undefined;
  }
}
