import path from 'node:path';
import { type KafkaInfo, startKafka } from '../test/helpers/kafka.ts';
import { type OpenSearchInfo, startOpenSearch } from '../test/helpers/opensearch.ts';
import { type CollectorInfo, startCollector } from '../test/helpers/otelcol.ts';
import { type PostgresInfo, parsePostgresUrl, psql, startPostgres } from '../test/helpers/postgres.ts';
import { writeRunDescription } from '../test/helpers/run-description.ts';
import { ensureKafkaJars } from './kafka-fetch.ts';
import { ensureOpenSearch } from './opensearch-fetch.ts';
import { ensureOtelcol } from './otelcol-build.ts';
import type { ServerNeeds } from './test-needs.ts';

export interface TestServers {
  /** The environment variables that describe the servers to the test processes. */
  env: Record<string, string>;
  /** Log file of each server we started, by name (copied to the test logs when tests fail). */
  logs: Record<string, string>;
  /** Stops what was started. Never throws. */
  stop(): Promise<void>;
}

/** Starts (or describes existing) servers for `needs`, side by side; their files go into runDir. */
export async function startTestServers(
  needs: ServerNeeds,
  options: { runDir: string; log: (message: string) => void },
): Promise<TestServers> {
  const { runDir, log } = options;
  const env: Record<string, string> = {};
  const logs: Record<string, string> = {};
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    await Promise.all(
      stops.map((stopOne) =>
        stopOne().catch((error: unknown) => {
          console.error(
            `npm test: stopping a test server failed: ${error instanceof Error ? error.message : error}`,
          );
        }),
      ),
    );
  };
  const describe = async (
    variable: string,
    name: string,
    info: PostgresInfo | KafkaInfo | OpenSearchInfo | CollectorInfo,
  ) => {
    const file = path.join(runDir, `${name}.json`);
    await writeRunDescription(file, info);
    env[variable] = file;
  };

  const postgres = async () => {
    const url = process.env.KUBEDIFF_TEST_POSTGRES_URL;
    if (url) {
      const parts = parsePostgresUrl(url);
      const version = (await psql(parts, 'SHOW server_version')).trim();
      log(
        `postgres: using the existing server at ${parts.host}:${parts.port} (KUBEDIFF_TEST_POSTGRES_URL), ${version}`,
      );
      await describe('KUBEDIFF_TEST_POSTGRES', 'postgres', { external: true, version, ...parts });
      return;
    }
    const server = await startPostgres({ log, keepLog: false });
    stops.push(() => server.stop());
    if (server.logFile) logs.postgres = server.logFile;
    await describe('KUBEDIFF_TEST_POSTGRES', 'postgres', server);
  };

  const kafka = async () => {
    await ensureKafkaJars(log);
    if (!needs.kafka) return;
    const brokers = process.env.KUBEDIFF_TEST_KAFKA_BROKERS;
    if (brokers) {
      log(`kafka: using the existing broker(s) ${brokers} (KUBEDIFF_TEST_KAFKA_BROKERS), PLAINTEXT only`);
      await describe('KUBEDIFF_TEST_KAFKA', 'kafka', {
        external: true,
        version: 'unknown',
        brokers,
        listeners: { PLAINTEXT: brokers },
      });
      return;
    }
    const broker = await startKafka({ log, keepLog: false });
    stops.push(() => broker.stop());
    if (broker.logFile) logs.kafka = broker.logFile;
    await describe('KUBEDIFF_TEST_KAFKA', 'kafka', broker);
  };

  const opensearch = async () => {
    const url = process.env.KUBEDIFF_TEST_OPENSEARCH_URL;
    if (url && needs.opensearch) {
      const version = ((await (await fetch(url)).json()) as { version?: { number?: string } }).version
        ?.number;
      log(
        `opensearch: using the existing node at ${new URL(url).host} (KUBEDIFF_TEST_OPENSEARCH_URL), ${version}`,
      );
      await describe('KUBEDIFF_TEST_OPENSEARCH', 'opensearch', {
        external: true,
        version: version ?? 'unknown',
        url,
      });
      return;
    }
    await ensureOpenSearch(log);
    if (!needs.opensearch) return;
    const node = await startOpenSearch({ log, keepLog: false });
    stops.push(() => node.stop());
    if (node.logFile) logs.opensearch = node.logFile;
    await describe('KUBEDIFF_TEST_OPENSEARCH', 'opensearch', node);
  };

  const otelcol = async () => {
    await ensureOtelcol(log);
    if (!needs.otelcol) return;
    const collector = await startCollector({ log, keepLog: false });
    stops.push(() => collector.stop());
    if (collector.logFile) logs.otelcol = collector.logFile;
    await describe('KUBEDIFF_TEST_OTELCOL', 'otelcol', collector);
  };

  const tasks: Array<Promise<void>> = [];
  if (needs.postgres) tasks.push(postgres());
  if (needs.kafka || needs.kafkaJars) tasks.push(kafka());
  if (needs.opensearch || needs.opensearchHome) tasks.push(opensearch());
  if (needs.otelcol || needs.otelcolBinary) tasks.push(otelcol());
  const failed = (await Promise.allSettled(tasks)).find((result) => result.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return { env, logs, stop };
}
