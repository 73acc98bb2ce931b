// The memory bounds derived from the heap (src/util/memory-budget.ts, docs/deploy.md "Memory"): on any
// heap their shares add up to 25/48 of it, each at most its documented maximum, and the sinks' part is
// divided among them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ADMISSION_CONCURRENT_REQUESTS,
  ADMISSION_THREAD_REQUESTS,
  AUDIT_CONCURRENT_REQUESTS,
  admissionThreadBounds,
  BUFFER_SHARE,
  MEMORY_SHARES,
  memoryBounds,
  sinkBounds,
} from '../../../src/util/memory-budget.ts';
import { SMALL_REVIEW_BYTES } from '../../../src/who/admission/admission-server.ts';
import { AdmissionThread } from '../../../src/who/admission/admission-thread.ts';

const MiB = 1024 * 1024;

/** Every bound of a watch with every buffer and `sinks` sinks, added up. */
function sum(heapBytes: number, sinks: number): number {
  const bounds = memoryBounds(heapBytes);
  const each = sinkBounds(bounds, sinks);
  return (
    bounds.stateBacklogBytes +
    bounds.standbyBufferBytes +
    bounds.admissionRequestBytes * ADMISSION_CONCURRENT_REQUESTS +
    bounds.auditRequestBytes * AUDIT_CONCURRENT_REQUESTS +
    bounds.whoPendingBytes +
    sinks * (Math.max(each.queueBytes, each.chatQueueBytes) + each.storyBytes)
  );
}

describe('memory bounds from the heap', () => {
  it('their shares add up to a little over half the heap: 25/48', () => {
    assert.ok(Math.abs(BUFFER_SHARE - 25 / 48) < 1e-12, String(BUFFER_SHARE));
  });

  it('on every heap, with every buffer and any number of sinks, they add up to at most their share of it', () => {
    for (const heapMiB of [64, 131, 256, 387, 515, 1024, 4288]) {
      for (const sinks of [1, 2, 3, 10]) {
        const total = sum(heapMiB * MiB, sinks);
        assert.ok(
          total <= (heapMiB * MiB * 25) / 48,
          `${heapMiB} MiB heap, ${sinks} sinks: ${total / MiB} MiB`,
        );
      }
    }
  });

  it('the chart’s 384 MB heap (387 MiB with the young generation): each bound, in MiB', () => {
    const bounds = memoryBounds(387 * MiB);
    const mib = (bytes: number) => Math.round((bytes / MiB) * 10) / 10;
    assert.deepEqual(
      {
        stateBacklog: mib(bounds.stateBacklogBytes),
        standby: mib(bounds.standbyBufferBytes),
        admissionRequest: mib(bounds.admissionRequestBytes),
        auditRequest: mib(bounds.auditRequestBytes),
        whoPending: mib(bounds.whoPendingBytes),
        sinks: mib(bounds.sinksBytes),
      },
      {
        stateBacklog: 32.3,
        standby: 32.3,
        admissionRequest: 4,
        auditRequest: 8.1,
        whoPending: 8.1,
        sinks: 64.5,
      },
    );
    assert.deepEqual(sinkBounds(bounds, 2), {
      queueBytes: Math.floor(((64.5 * MiB) / 2) * 0.75),
      chatQueueBytes: 16 * MiB,
      storyBytes: Math.floor(((64.5 * MiB) / 2) * 0.25),
    });
  });

  it('a large heap gets the documented maxima, no more', () => {
    const bounds = memoryBounds(4288 * MiB);
    assert.equal(bounds.stateBacklogBytes, MEMORY_SHARES.stateBacklog.maxBytes);
    assert.equal(bounds.standbyBufferBytes, 64 * MiB);
    assert.equal(bounds.admissionRequestBytes, 8 * MiB);
    assert.equal(bounds.auditRequestBytes, 16 * MiB);
    assert.deepEqual(sinkBounds(bounds, 1), {
      queueBytes: 64 * MiB,
      chatQueueBytes: 16 * MiB,
      storyBytes: 16 * MiB,
    });
  });

  it("the admission thread's bounds derive from the largest review: with the chart's heap, 16 MiB of reviews and a 65 MiB heap", () => {
    const { admissionRequestBytes } = memoryBounds(387 * MiB);
    const mib = (bytes: number) => Math.round((bytes / MiB) * 10) / 10;
    const chart = admissionThreadBounds(admissionRequestBytes);
    assert.deepEqual(
      { maxBytes: mib(chart.maxBytes), heapMiB: chart.heapMiB },
      { maxBytes: 16.1, heapMiB: 65 },
    );
    // From a heap of 768 MiB up (8 MiB reviews): 32 MiB and 128 MiB.
    const largest = admissionThreadBounds(memoryBounds(4096 * MiB).admissionRequestBytes);
    assert.deepEqual(largest, { maxBytes: 32 * MiB, heapMiB: 128 });
    // What the thread is made with.
    const thread = new AdmissionThread({ ignoredPaths: [] }, { maxRequestBytes: admissionRequestBytes });
    assert.equal(thread.maxBytes, chart.maxBytes);
  });

  it("the admission thread's reviews and the reads beside them fit the admission webhook's part", () => {
    for (const heapMiB of [64, 131, 387, 1024, 4288]) {
      const { admissionRequestBytes } = memoryBounds(heapMiB * MiB);
      // Held whole only in the thread's room; every other read keeps its first 64 KiB.
      const held =
        admissionThreadBounds(admissionRequestBytes).maxBytes +
        ADMISSION_CONCURRENT_REQUESTS * SMALL_REVIEW_BYTES;
      assert.ok(ADMISSION_THREAD_REQUESTS < ADMISSION_CONCURRENT_REQUESTS);
      assert.ok(
        held <= ADMISSION_CONCURRENT_REQUESTS * admissionRequestBytes,
        `${heapMiB} MiB heap: ${held / MiB} MiB`,
      );
    }
  });
});
