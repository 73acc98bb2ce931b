// The worker-thread wrapper (src/util/worker-thread.ts) with a real worker (test/fixtures/workers/):
// answers by id, a request's own error, a refused start and a crash that the next request recovers from,
// the time limit that terminates a runaway, the pending limit that refuses at once, and close().
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { type PendingLimit, type WorkerFailure, WorkerThread } from '../../../src/util/worker-thread.ts';
import type { TestJob } from '../../fixtures/workers/test-worker.ts';

const URL_OF_WORKER = new URL('../../fixtures/workers/test-worker.ts', import.meta.url);

class Failure extends Error {
  readonly kind: string;
  constructor(failure: WorkerFailure<string>) {
    super('error' in failure ? failure.error : 'message' in failure ? failure.message : failure.kind);
    this.kind = failure.kind;
  }
}

/** At most `max` requests pending; beyond, refused at once. */
class OneAtMost implements PendingLimit {
  pending = 0;
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.pending >= 1) throw new Error('refused: one is pending');
    this.pending++;
    try {
      return await work();
    } finally {
      this.pending--;
    }
  }
}

const threads: WorkerThread<{ refuse: boolean }, TestJob, string, string>[] = [];
after(() => Promise.all(threads.map((thread) => thread.close())));

function thread(options: { refuse?: boolean; timeLimitMs?: number; limit?: PendingLimit } = {}) {
  const created = new WorkerThread<{ refuse: boolean }, TestJob, string, string>({
    url: URL_OF_WORKER,
    start: { refuse: options.refuse ?? false },
    error: (failure) => new Failure(failure),
    timeLimitMs: options.timeLimitMs,
    limit: options.limit,
    keepAlive: 'busy',
  });
  threads.push(created);
  return created;
}

const failsWith = (kind: string, message?: RegExp) => (error: unknown) =>
  error instanceof Failure && error.kind === kind && (!message || message.test(error.message));

describe('WorkerThread', () => {
  it('answers each request by its id, in parallel; a request that fails fails alone', async () => {
    const worker = thread();
    const answers = await Promise.all(['a', 'b', 'c'].map((text) => worker.request({ do: 'echo', text })));
    assert.deepEqual(answers, ['echo a', 'echo b', 'echo c']);
    await assert.rejects(worker.request({ do: 'fail' }), failsWith('failed', /^the job failed$/));
    assert.equal(await worker.request({ do: 'echo', text: 'd' }), 'echo d');
  });

  it('a refused start rejects the request with the reason; ready() says so too', async () => {
    const worker = thread({ refuse: true });
    await assert.rejects(worker.ready(), failsWith('refused', /^told to refuse$/));
    await assert.rejects(worker.request({ do: 'echo', text: 'x' }), failsWith('refused'));
  });

  it('a crash fails the request it held; the next request gets a new worker', async () => {
    const worker = thread();
    await assert.rejects(worker.request({ do: 'crash' }), failsWith('crashed', /the thread crashed/));
    assert.equal(await worker.request({ do: 'echo', text: 'again' }), 'echo again');
  });

  it('past the time limit a runaway is terminated; requests waiting behind it get a new worker', async () => {
    const worker = thread({ timeLimitMs: 1_000 });
    const runaway = worker.request({ do: 'spin' });
    const behind = worker.request({ do: 'echo', text: 'behind' });
    await assert.rejects(runaway, failsWith('timeout'));
    assert.equal(await behind, 'echo behind');
  });

  it('beyond the pending limit a request is refused at once, and prepares nothing', async () => {
    const worker = thread({ limit: new OneAtMost() });
    const slow = worker.request({ do: 'sleep', ms: 300 });
    let prepared = false;
    await assert.rejects(
      worker.request(async () => {
        prepared = true;
        return { do: 'echo', text: 'x' };
      }),
      /refused: one is pending/,
    );
    assert.equal(prepared, false);
    assert.equal(await slow, 'done');
  });

  it('close() fails what waits and refuses what comes after', async () => {
    const worker = thread();
    await worker.ready();
    const waiting = assert.rejects(worker.request({ do: 'sleep', ms: 5_000 }), failsWith('closed'));
    await worker.close();
    await waiting;
    await assert.rejects(worker.request({ do: 'echo', text: 'late' }), failsWith('closed'));
  });
});
