// Figure 15: the logging-stack sinks' sustained throughput, each against a raw client of the same server
// in the same run, pair by pair (bench/lib/stats.ts), on servers of the bench's own (the test harness's):
// - OTLP: the sink (OtlpSink, protobuf) against a plain loop that encodes the same records (otlp-records.ts)
//   with the same encoder (@opentelemetry/otlp-transformer) and POSTs them in batches of 500, each
//   awaited, to an OpenTelemetry Collector (OTLP receiver, file exporter): what the delivery costs;
// - OpenSearch: the sink (SearchSink, daily index) against a plain loop of _bulk requests of 500 index
//   actions (the event's JSON, _id its id), each awaited, to an OpenSearch node (its indices under the
//   sink's index template, which both need);
// - a webhook with a layout, and with format: cloudevents, against the same webhook sending the event's
//   JSON, one request per event to a loopback receiver: what the layout or the CloudEvent costs.
// Each sink gets every event at once (its queue sized to hold them all, so none is folded into a
// digest) and is timed until close() reports them delivered. The figure is events per second of each.

import { ProtobufLogsSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { Agent, request } from 'undici';
import type { ChangeEvent } from '../src/events/event.ts';
import type { Sink } from '../src/sinks/core/sink.ts';
import { LayoutThread } from '../src/sinks/http/webhook/layout-thread.ts';
import { WebhookSink } from '../src/sinks/http/webhook/webhook.ts';
import type { WebhookFormat } from '../src/sinks/http/webhook/webhook-body.ts';
import { OtlpSink } from '../src/sinks/logs/otlp/otlp.ts';
import { eventRecord } from '../src/sinks/logs/otlp/records.ts';
import { SearchSink } from '../src/sinks/logs/search/search.ts';
import { indexTemplate } from '../src/sinks/logs/search/template.ts';
import type { Logger } from '../src/util/log.ts';
import { HttpReceiver } from '../test/helpers/http-receiver.ts';
import { startOpenSearch } from '../test/helpers/opensearch.ts';
import { startCollector } from '../test/helpers/otelcol.ts';
import { benchEvents } from './kafka.ts';
import { pairedSamples, pairedSpread, type Spread } from './lib/stats.ts';

export interface SinkPair {
  sink: string;
  baseline: string;
  events: number;
  sinkRate: Spread;
  baselineRate: Spread;
  ratio: Spread;
  /** Events the sink did not report delivered, over all runs (expected 0). */
  undelivered: number;
}

export interface LogSinkFigures {
  pairs: number;
  eventBytes: number;
  opensearchVersion: string;
  results: SinkPair[];
}

const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {} };
const BATCH = 500;
const PAGERDUTY_LAYOUT =
  '{ "routing_key": "R", "event_action": "trigger", "dedup_key": id, "payload": { "summary": $substring(type & " " & object.kind & " " & object.namespace & "/" & object.name & ": " & $join(changes.path, ", "), 0, 1024), "source": cluster, "severity": type = "DELETED" ? "warning" : "info", "timestamp": time, "custom_details": { "changes": changes } } }';

/** Delivers `events` through a fresh sink; resolves to events/s, counting what was not delivered. */
async function throughSink(
  make: () => Sink | Promise<Sink>,
  events: readonly ChangeEvent[],
  missed: { count: number },
): Promise<number> {
  const sink = await make();
  const started = performance.now();
  for (const event of events) sink.deliver(event);
  const report = await sink.close(600_000);
  const seconds = (performance.now() - started) / 1000;
  missed.count += events.length - report.stats.delivered;
  return events.length / seconds;
}

async function throughLoop(
  send: (chunk: readonly ChangeEvent[]) => Promise<void>,
  events: readonly ChangeEvent[],
): Promise<number> {
  const started = performance.now();
  for (let offset = 0; offset < events.length; offset += BATCH)
    await send(events.slice(offset, offset + BATCH));
  return events.length / ((performance.now() - started) / 1000);
}

async function measurePair(
  label: { sink: string; baseline: string },
  pairs: number,
  events: readonly ChangeEvent[],
  sink: (missed: { count: number }) => Promise<number>,
  baseline: () => Promise<number>,
): Promise<SinkPair> {
  const missed = { count: 0 };
  const samples = await pairedSamples(pairs, 1, () => sink(missed), baseline);
  const spread = pairedSpread(samples, (rate) => rate);
  return {
    ...label,
    events: events.length,
    sinkRate: spread.a,
    baselineRate: spread.b,
    ratio: spread.ratio,
    undelivered: missed.count,
  };
}

export async function measureLogSinks(options: {
  events: number;
  webhookEvents: number;
  pairs: number;
  log: (message: string) => void;
}): Promise<LogSinkFigures> {
  const events = benchEvents(options.events);
  const webhookEvents = events.slice(0, options.webhookEvents);
  const agent = new Agent({ connections: 4 });
  const results: SinkPair[] = [];
  const queue = { capacity: events.length, maxBytes: 1024 ** 3 };

  options.log(`15. OTLP: ${options.events} events, ${options.pairs} pairs (after a warm-up pair)`);
  const collector = await startCollector({ label: 'bench-otelcol' });
  try {
    const url = new URL('/v1/logs', collector.httpEndpoint);
    const scope = { name: 'kubediff' };
    const resource = resourceFromAttributes({ 'service.name': 'kubediff', 'k8s.cluster.name': 'bench' });
    results.push(
      await measurePair(
        { sink: 'OTLP sink (protobuf)', baseline: 'the same records and encoder, POSTs of 500 awaited' },
        options.pairs,
        events,
        (missed) =>
          throughSink(
            () => OtlpSink.create({ name: 'otlp', endpoint: collector.httpEndpoint, log: silent, queue }),
            events,
            missed,
          ),
        () =>
          throughLoop(async (chunk) => {
            // The sink's own records (otlp-records.ts), so that both send the same bytes.
            const now: [number, number] = [Math.floor(Date.now() / 1000), 0];
            const body = ProtobufLogsSerializer.serializeRequest(
              chunk.map((event) => {
                const record = eventRecord(event);
                return {
                  hrTime: [Math.floor(record.timeMs / 1000), (record.timeMs % 1000) * 1e6] as [
                    number,
                    number,
                  ],
                  hrTimeObserved: now,
                  severityNumber: record.severityNumber,
                  severityText: record.severityText,
                  body: event as never,
                  resource,
                  instrumentationScope: scope,
                  attributes: record.attributes,
                  droppedAttributesCount: 0,
                };
              }),
            );
            const response = await request(url, {
              method: 'POST',
              dispatcher: agent,
              headers: { 'content-type': 'application/x-protobuf' },
              body,
            });
            await response.body.dump();
            if (response.statusCode !== 200) throw new Error(`Collector answered ${response.statusCode}`);
          }, events),
      ),
    );
  } finally {
    await collector.stop();
  }

  options.log(`15. OpenSearch: ${options.events} events, ${options.pairs} pairs (after a warm-up pair)`);
  const node = await startOpenSearch({ label: 'bench-opensearch' });
  let run = 0;
  try {
    const bulkUrl = new URL('/_bulk', node.url);
    // The raw client's indices get the sink's template: with dynamic mapping, a change's number and the
    // next change's string in one document conflict (the reason for the template).
    const template = await request(new URL('/_index_template/bench-raw', node.url), {
      method: 'PUT',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(indexTemplate('bench-raw', 'daily')),
    });
    await template.body.dump();
    results.push(
      await measurePair(
        { sink: 'OpenSearch sink (_bulk, daily index)', baseline: '_bulk of 500 index actions, awaited' },
        options.pairs,
        events,
        (missed) =>
          throughSink(
            () =>
              new SearchSink({
                name: 'opensearch',
                flavor: 'opensearch',
                url: node.url,
                index: `bench-sink-${run++}`,
                log: silent,
                queue,
              }),
            events,
            missed,
          ),
        () => {
          const index = `bench-raw-${run++}`;
          return throughLoop(async (chunk) => {
            const body = `${chunk.flatMap((event) => [JSON.stringify({ index: { _index: index, _id: event.id } }), JSON.stringify(event)]).join('\n')}\n`;
            const response = await request(bulkUrl, {
              method: 'POST',
              dispatcher: agent,
              headers: { 'content-type': 'application/x-ndjson' },
              body,
            });
            const answer = (await response.body.json()) as { errors?: boolean };
            if (response.statusCode !== 200 || answer.errors)
              throw new Error(`OpenSearch answered ${response.statusCode}`);
          }, events);
        },
      ),
    );
  } finally {
    await node.stop();
  }

  options.log(`15. webhook layouts and CloudEvents: ${options.webhookEvents} events, ${options.pairs} pairs`);
  const receiver = await HttpReceiver.start();
  try {
    // A format per sink: a sink stops its layout's thread when it closes.
    const webhook = (format: () => WebhookFormat) => () =>
      new WebhookSink({ url: receiver.url('/hook'), format: format(), log: silent, queue });
    const plain = (missed: { count: number }) =>
      throughSink(
        webhook(() => ({ kind: 'json' })),
        webhookEvents,
        missed,
      );
    const ignore = { count: 0 };
    for (const [name, format] of [
      [
        'webhook with a layout (PagerDuty Events v2)',
        (): WebhookFormat => ({ kind: 'layout', layout: new LayoutThread(PAGERDUTY_LAYOUT) }),
      ],
      [
        'webhook, format: cloudevents (structured)',
        (): WebhookFormat => ({ kind: 'cloudevents', mode: 'structured' }),
      ],
    ] as const) {
      results.push(
        await measurePair(
          { sink: name, baseline: 'the same webhook, the event’s JSON' },
          options.pairs,
          webhookEvents,
          (missed) => throughSink(webhook(format), webhookEvents, missed),
          () => plain(ignore),
        ),
      );
      receiver.requests.length = 0;
    }
  } finally {
    await receiver.close();
    await agent.destroy();
  }
  return {
    pairs: options.pairs,
    eventBytes: JSON.stringify(events[0]).length,
    opensearchVersion: node.version,
    results,
  };
}
