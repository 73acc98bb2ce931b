// A real OpenTelemetry Collector for the tests (test/otelcol, built by scripts/otelcol-build.ts into
// .cache/otelcol/bin): the OTLP receiver on free 127.0.0.1 ports (HTTP, and gRPC), and the file exporter
// writing every log batch it receives as one OTLP/JSON line to a file in `outputDir` (a file per start:
// the exporter truncates its file when it starts), which collectorLogs() reads: a neutral reader of what
// a sink sent. Its own telemetry is off (it would take port 8888).
//
// scripts/run-tests.ts starts one per `npm test` run when a selected test file imports otelcol-env.ts. That
// Collector is shared by the test files running side by side: tell your records apart (a cluster name of
// your own), and never stop it; a test that stops and restarts a Collector starts its own with
// startCollector() (a RestartableServer: stopServer()/startServer() keep its ports and output file).
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from './cluster.ts';
import {
  freePorts,
  launchProcess,
  type ManagedProcess,
  retryOnPortInUse,
  type ServerFiles,
  type ServerOptions,
  startFailure,
  tcpAccepts,
  terminate,
  waitUntil,
} from './processes.ts';
import { type RestartableServer, ServerProcess } from './server-process.ts';

export const otelcolBinary = path.join(repoRoot, '.cache', 'otelcol', 'bin', 'otelcol');

/** Everything a test needs to reach the Collector; JSON-serialisable. */
export interface CollectorInfo extends ServerFiles {
  /** OTLP/HTTP base URL (http://127.0.0.1:<port>, https:// with TLS): kubediff's --otlp-endpoint. */
  httpEndpoint: string;
  /** OTLP/gRPC host:port. */
  grpcEndpoint: string;
  /** The file exporter's output: logs-<start>.jsonl, one OTLP/JSON ExportLogsServiceRequest per line. */
  outputDir: string;
}

export type RunningCollector = CollectorInfo & RestartableServer;

export interface StartCollectorOptions extends ServerOptions {
  /**
   * Extra exporters (name → settings, YAML as JSON) added to the logs pipeline beside the file exporter:
   * the Loki path of docs/sinks.md forwards with `otlphttp`.
   */
  exporters?: Record<string, unknown>;
  /** The receiver's OTLP/HTTP logs path (default /v1/logs): Loki's is /otlp/v1/logs. */
  logsUrlPath?: string;
  /** TLS on the OTLP/HTTP receiver (PEM files); with clientCaFile, a client certificate is required. */
  tls?: { certFile: string; keyFile: string; clientCaFile?: string };
}

/** The Collector binary, or an Error saying how to build it. */
export function collectorBinary(): string {
  if (!existsSync(otelcolBinary))
    throw new Error(
      `the OpenTelemetry Collector is not built (${path.relative(repoRoot, otelcolBinary)}): run \`npm run otelcol:build\` (npm test does it when a test needs it).`,
    );
  return otelcolBinary;
}

/** The Collector configuration (YAML is a superset of JSON). */
export function collectorConfig(
  http: string,
  grpc: string,
  outputFile: string,
  options: Pick<StartCollectorOptions, 'exporters' | 'logsUrlPath' | 'tls'> = {},
): Record<string, unknown> {
  const exporters = {
    file: { path: outputFile, format: 'json', flush_interval: '100ms' },
    ...options.exporters,
  };
  return {
    receivers: {
      otlp: {
        protocols: {
          http: {
            endpoint: http,
            ...(options.logsUrlPath ? { logs_url_path: options.logsUrlPath } : {}),
            ...(options.tls
              ? {
                  tls: {
                    cert_file: options.tls.certFile,
                    key_file: options.tls.keyFile,
                    ...(options.tls.clientCaFile ? { client_ca_file: options.tls.clientCaFile } : {}),
                  },
                }
              : {}),
          },
          grpc: { endpoint: grpc },
        },
      },
    },
    exporters,
    service: {
      telemetry: { metrics: { level: 'none' }, logs: { level: 'warn' } },
      pipelines: { logs: { receivers: ['otlp'], exporters: Object.keys(exporters) } },
    },
  };
}

/** Starts a Collector of our own; see the file comment. startTimeoutMs: default 60 s. */
export async function startCollector(options: StartCollectorOptions = {}): Promise<RunningCollector> {
  return retryOnPortInUse('otelcol', () => startOwnCollector(options), options.log);
}

async function startOwnCollector(options: StartCollectorOptions): Promise<RunningCollector> {
  const log = options.log ?? (() => {});
  const startedAt = performance.now();
  const binary = collectorBinary();
  const dir = await mkdtemp(path.join(options.tmpRoot ?? tmpdir(), 'kubediff-otelcol-'));
  const processes: ManagedProcess[] = [];
  try {
    const [httpPort, grpcPort] = (await freePorts(2)) as [number, number];
    const http = `127.0.0.1:${httpPort}`;
    const grpc = `127.0.0.1:${grpcPort}`;
    const outputDir = path.join(dir, 'output');
    await mkdir(outputDir);
    const configFile = path.join(dir, 'config.yaml');
    let starts = 0;
    const launch = async () => {
      const outputFile = path.join(outputDir, `logs-${String(++starts).padStart(4, '0')}.jsonl`);
      await writeFile(configFile, JSON.stringify(collectorConfig(http, grpc, outputFile, options), null, 2));
      const p = launchProcess({ name: 'otelcol', binary, args: ['--config', configFile], dir });
      processes.splice(0, processes.length, p);
      await waitUntil(
        'the OpenTelemetry Collector to accept OTLP',
        async () => ((await tcpAccepts(http)) && (await tcpAccepts(grpc)) ? true : 'not listening yet'),
        { deadline: Date.now() + (options.startTimeoutMs ?? 60_000), processes, intervalMs: 50 },
      );
      return p;
    };
    const collector = new ServerProcess({ dir, launch, graceMs: 10_000 });
    await collector.start();
    log(`otelcol: ready in ${((performance.now() - startedAt) / 1000).toFixed(1)}s at ${http}`);
    const info: CollectorInfo & { logFile: string } = {
      httpEndpoint: `${options.tls ? 'https' : 'http'}://${http}`,
      grpcEndpoint: grpc,
      outputDir,
      dir,
      logFile: path.join(dir, 'otelcol.log'),
      pid: collector.pid,
    };
    return collector.controls(info, options, `otelcol-${httpPort}`);
  } catch (error) {
    throw await startFailure('the OpenTelemetry Collector', error, processes, async () => {
      for (const p of processes) await terminate(p);
      await rm(dir, { recursive: true, force: true });
    });
  }
}

/** An OTLP AnyValue as the Collector's JSON writes it. */
export type OtlpValue =
  | { stringValue: string }
  | { intValue: string | number }
  | { doubleValue: number }
  | { boolValue: boolean }
  | { arrayValue: { values?: OtlpValue[] } }
  | { kvlistValue: { values?: { key: string; value: OtlpValue }[] } }
  | Record<string, never>;

/** One log record the Collector wrote, with its resource's attributes, decoded to plain values. */
export interface CollectedRecord {
  resource: Record<string, unknown>;
  scope: string;
  attributes: Record<string, unknown>;
  body: unknown;
  severityNumber?: number;
  severityText?: string;
  timeUnixNano?: string;
  observedTimeUnixNano?: string;
}

/** Every log record in the Collector's output files so far, in the order written. */
export async function collectorLogs(info: CollectorInfo): Promise<CollectedRecord[]> {
  const files = (await readdir(info.outputDir)).filter((name) => name.endsWith('.jsonl')).sort();
  let text = '';
  for (const file of files) text += `${await readFile(path.join(info.outputDir, file), 'utf8')}\n`;
  const records: CollectedRecord[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const request = JSON.parse(line) as {
      resourceLogs?: {
        resource?: { attributes?: { key: string; value: OtlpValue }[] };
        scopeLogs?: {
          scope?: { name?: string };
          logRecords?: {
            attributes?: { key: string; value: OtlpValue }[];
            body?: OtlpValue;
            severityNumber?: number;
            severityText?: string;
            timeUnixNano?: string;
            observedTimeUnixNano?: string;
          }[];
        }[];
      }[];
    };
    for (const resourceLogs of request.resourceLogs ?? []) {
      const resource = attributesOf(resourceLogs.resource?.attributes);
      for (const scopeLogs of resourceLogs.scopeLogs ?? []) {
        for (const record of scopeLogs.logRecords ?? []) {
          records.push({
            resource,
            scope: scopeLogs.scope?.name ?? '',
            attributes: attributesOf(record.attributes),
            body: record.body ? plainValue(record.body) : undefined,
            ...(record.severityNumber !== undefined ? { severityNumber: record.severityNumber } : {}),
            ...(record.severityText !== undefined ? { severityText: record.severityText } : {}),
            ...(record.timeUnixNano !== undefined ? { timeUnixNano: record.timeUnixNano } : {}),
            ...(record.observedTimeUnixNano !== undefined
              ? { observedTimeUnixNano: record.observedTimeUnixNano }
              : {}),
          });
        }
      }
    }
  }
  return records;
}

function attributesOf(list: { key: string; value: OtlpValue }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, plainValue(value)]));
}

/** An OTLP AnyValue as the JSON value it stands for (ints as numbers). */
export function plainValue(value: OtlpValue): unknown {
  if ('stringValue' in value) return value.stringValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return value.doubleValue;
  if ('boolValue' in value) return value.boolValue;
  if ('arrayValue' in value) return (value.arrayValue.values ?? []).map(plainValue);
  if ('kvlistValue' in value)
    return Object.fromEntries(
      (value.kvlistValue.values ?? []).map(({ key, value: v }) => [key, plainValue(v)]),
    );
  return null;
}
