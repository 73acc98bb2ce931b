// Every queue of a chat sink stays bounded when the platform says "later" (issue 27): against a real
// loopback receiver that answers 429 with a ten-minute Retry-After forever, closed stories no longer pile
// up in the sink's ready list. Past the bound (capacity events, capacityBytes of them) further stories are
// summarized in one digest and their events written in full to the dead-letter file as they are folded,
// said once in the log and counted (kubediff_sink_overflows_total); at the stop every event is accounted
// for. Also: a receiver whose refusals carry a new request id each time is logged once per status, and
// the story builder bounds the bytes its open stories hold, not only their count.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { ChangeEvent } from '../../../../../src/events/event.ts';
import { StoryBuilder } from '../../../../../src/events/story.ts';
import { ChatSink } from '../../../../../src/sinks/chat/core/chat.ts';
import { DeadLetterFile } from '../../../../../src/sinks/core/dead-letter.ts';
import { CHAT_PLATFORMS } from '../../../../helpers/chat-platforms.ts';
import { HttpReceiver } from '../../../../helpers/http-receiver.ts';
import { memoryLog } from '../../../../helpers/sink-test.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubediff-chat-bounds-'));
const receivers: HttpReceiver[] = [];
after(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
  rmSync(dir, { recursive: true, force: true });
});

let sequence = 0;
/** An event of its own owner (so each is its own story), carrying `valueBytes` of data. */
function event(owner: number, valueBytes = 100): ChangeEvent {
  sequence++;
  return {
    id: `uid-${sequence}:${sequence}`,
    type: 'UPDATED',
    time: new Date(Date.UTC(2026, 10, 22, 10, 31, 7)).toISOString(),
    cluster: 'prod',
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace: 'shop',
      name: `cm-${sequence}`,
      uid: `uid-${sequence}`,
      resourceVersion: String(sequence),
    },
    owner: { apiVersion: 'apps/v1', kind: 'Deployment', name: `web-${owner}`, uid: `owner-${owner}` },
    changes: [{ op: 'replace', path: '/data/blob', from: 'a', to: 'x'.repeat(valueBytes) }],
  };
}

function deadLetterEvents(path: string): number {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.includes('"event"')).length;
}

async function laterForever(): Promise<HttpReceiver> {
  const receiver = await HttpReceiver.start({
    defaultReply: { status: 429, headers: { 'retry-after': '600' }, body: 'slow down' },
  });
  receivers.push(receiver);
  return receiver;
}

describe('a chat platform that answers 429 with a long Retry-After forever', () => {
  for (const bound of ['events', 'bytes'] as const) {
    it(`keeps closed stories within the bound (${bound}), dead-letters and counts the overflow, says it once`, async (t) => {
      const receiver = await laterForever();
      const log = memoryLog();
      const deadLetterPath = join(dir, `dead-${bound}.jsonl`);
      // Room for every event: the file's own cap is not what this test is about.
      const deadLetter = DeadLetterFile.open(deadLetterPath, log, { maxFileBytes: 1024 ** 3, maxFiles: 1 });
      const capacity = bound === 'events' ? 50 : 100_000;
      const capacityBytes = bound === 'events' ? 64 * 1024 * 1024 : 200 * 1024;
      const valueBytes = bound === 'events' ? 100 : 4_000;
      const sink = new ChatSink({
        platform: CHAT_PLATFORMS.teams.create(receiver.url('/hook')),
        name: 'teams',
        minIntervalMs: 10,
        gatherMs: 0,
        capacity,
        capacityBytes,
        // Ten stories open at most: each event past that closes the oldest at once, no timer needed.
        stories: { windowMs: 600_000, maxLengthMs: 600_000, maxOpenEvents: 10 },
        deadLetter,
        log,
      });
      t.after(async () => {
        await sink.close(0);
        deadLetter.close();
      });
      // The first story is told; the platform says "in ten minutes", and keeps saying it.
      for (let owner = 0; owner < 11; owner++) sink.deliver(event(owner, valueBytes));
      await receiver.waitForRequests(1);
      const total = 5_000;
      for (let owner = 11; owner < total; owner++) sink.deliver(event(owner, valueBytes));

      // While the platform still says later: 4,990 stories closed, one in flight, ten open. What waits
      // in full is within the bound; the rest is in the dead-letter file already, none of it lost.
      const held = total - 10 - 1 - deadLetterEvents(deadLetterPath);
      const heldBound = bound === 'events' ? 2 * capacity : Math.ceil((2 * capacityBytes) / valueBytes);
      assert.ok(held <= heldBound, `${held} events held in full (bound ${heldBound})`);
      const stats = sink.stats();
      assert.equal(stats.pending, total);
      assert.equal(stats.lost + stats.deadLettered, 0);
      assert.equal(stats.overflows, 1);
      const said = log.warnings.filter((line) =>
        line.includes('closed stories are waiting for their messages'),
      );
      assert.equal(said.length, 1, log.warnings.join('\n'));
      assert.match(said[0]!, new RegExp(`written in full to ${deadLetterPath}`));
      assert.equal(receiver.requests.length, 1, 'nothing sent before the Retry-After');

      // The stop: every event dead-lettered (none lost), in the file once each.
      const report = await sink.close(100);
      deadLetter.close();
      assert.equal(report.stats.accepted, total);
      assert.equal(report.stats.deadLettered, total);
      assert.equal(report.stats.lost + report.stats.delivered + report.stats.summarized, 0);
      const ids = readFileSync(deadLetterPath, 'utf8')
        .split('\n')
        .filter((line) => line.includes('"event"'))
        .map((line) => (JSON.parse(line) as { event: ChangeEvent }).event.id);
      assert.equal(new Set(ids).size, total);
    });
  }

  it('logs refusals once per status, whatever request id the receiver puts in each answer', async (t) => {
    let id = 0;
    const receiver = await HttpReceiver.start({
      respond: () => ({
        status: 400,
        body: JSON.stringify({ error: 'invalid payload', request_id: `req-${++id}` }),
      }),
    });
    receivers.push(receiver);
    const log = memoryLog();
    const sink = new ChatSink({
      platform: CHAT_PLATFORMS.discord.create(receiver.url('/api/webhooks/1/X')),
      name: 'discord',
      minIntervalMs: 0,
      gatherMs: 0,
      log,
    });
    t.after(() => sink.close(0));
    for (let n = 0; n < 5; n++) {
      sink.deliver(event(n));
      await receiver.waitForRequests(n + 1);
    }
    const report = await sink.close(5_000);
    assert.equal(report.stats.lost, 5);
    const refusals = log.warnings.filter((line) => line.includes('HTTP 400'));
    assert.equal(refusals.length, 1, refusals.join('\n'));
    assert.match(refusals[0]!, /req-1/);
  });
});

describe('the story builder', () => {
  it('bounds the bytes its open stories hold, not only their number', () => {
    const closed: string[] = [];
    const builder = new StoryBuilder(
      { windowMs: 600_000, maxLengthMs: 600_000, maxOpenEvents: 10_000, maxOpenBytes: 100_000 },
      { story: (story) => closed.push(story.owner.name) },
    );
    for (let owner = 0; owner < 30; owner++) builder.add(event(owner, 20_000));
    const stats = builder.stats();
    assert.ok(stats.openBytes <= 100_000, `${stats.openBytes} bytes open`);
    assert.equal(stats.openEvents, 4);
    assert.equal(stats.closedAtBufferLimit, 26);
    assert.deepEqual(closed.slice(0, 3), ['web-0', 'web-1', 'web-2']);
    builder.flush();
  });
});
