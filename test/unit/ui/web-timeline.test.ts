// The timeline's arithmetic (src/ui/web/timeline.ts): where time and rows go, the axis's ticks and
// their labels, the rows an event belongs to, a density cell's colour and shade, a mark's shape, and
// the line that says what is in view.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EventSummary } from '../../../src/state/timeline-reader.ts';
import {
  commonestType,
  densityOpacity,
  formatTime,
  layoutOf,
  markPoints,
  rowKeyOf,
  ticksOf,
  timelineSummary,
} from '../../../src/ui/web/timeline.ts';

const at = (time: string) => Date.parse(`2026-03-04T${time}Z`);
const MINUTE = 60_000;
const DAY = 86_400_000;

function event(overrides: Partial<EventSummary> = {}): EventSummary {
  return {
    seq: 1,
    id: 'u1:1',
    time: '2026-03-04T10:00:00.000Z',
    type: 'UPDATED',
    resource: 'deployments',
    kind: 'Deployment',
    namespace: 'shop',
    name: 'web',
    uid: 'u1',
    changes: 1,
    ...overrides,
  };
}

describe('layout', () => {
  it('time across the plot right of the labels, rows down under the axis', () => {
    const layout = layoutOf(1_000, { from: '2026-03-04T10:00:00Z', to: '2026-03-04T11:00:00Z' }, 3);
    assert.equal(layout.width, 1_000);
    assert.equal(layout.height, 22 + 3 * 22 + 4);
    assert.equal(layout.span, 3_600_000);
    assert.equal(layout.plot, 760);
    assert.equal(layout.x(at('10:00:00')), 230);
    assert.equal(layout.x(at('10:30:00')), 610);
    assert.equal(layout.x(at('11:00:00')), 990);
    assert.deepEqual([0, 1, 2].map(layout.rowTop), [22, 44, 66]);
  });
});

describe('the axis', () => {
  const ticks = (from: number, to: number) => ticksOf({ from, to, span: to - from });

  it('an hour: every 15 minutes, on the quarter hour, the end left out', () => {
    assert.deepEqual(ticks(at('10:00:00'), at('11:00:00')), [
      at('10:00:00'),
      at('10:15:00'),
      at('10:30:00'),
      at('10:45:00'),
    ]);
    assert.deepEqual(ticks(at('10:07:00'), at('11:07:00')), [
      at('10:15:00'),
      at('10:30:00'),
      at('10:45:00'),
      at('11:00:00'),
    ]);
  });

  it('a minute: every 15 seconds; a month: every week; longer, still every week', () => {
    assert.deepEqual(ticks(at('10:00:00'), at('10:01:00')), [
      at('10:00:00'),
      at('10:00:15'),
      at('10:00:30'),
      at('10:00:45'),
    ]);
    // Weeks from the epoch's: Thursdays, at midnight UTC.
    assert.deepEqual(
      ticks(at('00:00:00'), at('00:00:00') + 30 * DAY).map((tick) =>
        new Date(tick).toISOString().slice(0, 10),
      ),
      ['2026-03-05', '2026-03-12', '2026-03-19', '2026-03-26', '2026-04-02'],
    );
    assert.equal(ticks(at('00:00:00'), at('00:00:00') + 100 * DAY).length, 15);
  });

  it('labels: seconds under two minutes, minutes up to two days, the date beyond', () => {
    assert.equal(formatTime(at('10:15:30'), MINUTE), '10:15:30');
    assert.equal(formatTime(at('10:15:30'), 3_600_000), '10:15');
    assert.equal(formatTime(at('10:15:30'), 2 * DAY), '10:15');
    assert.equal(formatTime(at('10:15:30'), 3 * DAY), '03-04 10:15');
  });
});

describe('rows, density and marks', () => {
  it("an event's row: its namespace (- when cluster-scoped) or its resource", () => {
    assert.equal(rowKeyOf(event(), 'namespace'), 'shop');
    assert.equal(rowKeyOf(event({ namespace: undefined, resource: 'namespaces' }), 'namespace'), '-');
    assert.equal(rowKeyOf(event(), 'kind'), 'deployments');
  });

  it("a cell's colour: its commonest type, ties to deleted, then updated", () => {
    const cell = (added: number, updated: number, deleted: number) => ({
      row: 'r',
      bucket: 0,
      added,
      updated,
      deleted,
    });
    assert.equal(commonestType(cell(3, 1, 0)), 'added');
    assert.equal(commonestType(cell(2, 2, 0)), 'updated');
    assert.equal(commonestType(cell(1, 1, 1)), 'deleted');
    assert.equal(commonestType(cell(0, 4, 5)), 'deleted');
  });

  it("a cell's shade: 0.25 for none, 1 for the busiest, on a log scale between", () => {
    assert.equal(densityOpacity(0, 100), '0.25');
    assert.equal(densityOpacity(1, 100), '0.36');
    assert.equal(densityOpacity(10, 100), '0.64');
    assert.equal(densityOpacity(100, 100), '1.00');
    assert.equal(densityOpacity(1, 1), '1.00');
  });

  it("a mark's shape: added ▲, updated ■, deleted ▼", () => {
    assert.equal(markPoints('ADDED', 100, 50), '100,43 106,55 94,55');
    assert.equal(markPoints('UPDATED', 100, 50), '95,45 105,45 105,55 95,55');
    assert.equal(markPoints('DELETED', 100, 50), '94,45 106,45 100,57');
  });

  it('the status line: how many events, and the bucket of the density in seconds', () => {
    assert.equal(timelineSummary({ total: 1 }), '1 event in view.');
    assert.equal(timelineSummary({ total: 0 }), '0 events in view.');
    assert.equal(
      timelineSummary({ total: 12_345, density: { bucketMs: 36_000, cells: [] } }),
      '12345 events in view, shown as density per 36 s.',
    );
    assert.equal(
      timelineSummary({ total: 3_000, density: { bucketMs: 400, cells: [] } }),
      '3000 events in view, shown as density per 1 s.',
    );
  });
});
