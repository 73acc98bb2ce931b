// The servers `npm test` runs beside the control plane, for the test files that need them: PostgreSQL
// (test/helpers/postgres.ts), Apache Kafka (test/helpers/kafka.ts), OpenSearch (opensearch.ts) and the
// OpenTelemetry Collector (otelcol.ts). A server is started only when a selected test file imports,
// directly or through other modules of the repository, the module through which tests reach it
// (postgres-env.ts, kafka-env.ts, opensearch-env.ts, otelcol-env.ts); the Kafka jars, the OpenSearch node
// and the Collector binary are fetched or built when a file imports kafka.ts, opensearch.ts or otelcol.ts at
// all (a test may start a server of its own). Each server is described to the test processes by a JSON
// file named in an environment variable, like the cluster; an existing server can be used instead
// (KUBEDIFF_TEST_POSTGRES_URL, KUBEDIFF_TEST_KAFKA_BROKERS, KUBEDIFF_TEST_OPENSEARCH_URL).
import { globSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../test/helpers/cluster.ts';
import { type KafkaInfo, startKafka } from '../test/helpers/kafka.ts';
import { type OpenSearchInfo, startOpenSearch } from '../test/helpers/opensearch.ts';
import { type CollectorInfo, startCollector } from '../test/helpers/otelcol.ts';
import { type PostgresInfo, parsePostgresUrl, psql, startPostgres } from '../test/helpers/postgres.ts';
import { writeRunDescription } from '../test/helpers/run-description.ts';
import { ensureKafkaJars } from './kafka-fetch.ts';
import { ensureOpenSearch } from './opensearch-fetch.ts';
import { ensureOtelcol } from './otelcol-build.ts';

export interface ServerNeeds {
  postgres: boolean;
  kafka: boolean;
  /** The jars without the shared broker: a test that starts brokers of its own. */
  kafkaJars: boolean;
  opensearch: boolean;
  /** The node's files without the shared node: a test that starts nodes of its own. */
  opensearchHome: boolean;
  otelcol: boolean;
  /** The Collector binary without the shared Collector: a test that starts Collectors of its own. */
  otelcolBinary: boolean;
}

const helper = (name: string) => path.join(repoRoot, 'test', 'helpers', name);

/** Which servers the test files (paths or globs, relative to the repository) need. */
export function serverNeeds(patterns: string[]): ServerNeeds {
  const files = patterns
    .flatMap((pattern) => globSync(pattern, { cwd: repoRoot }))
    .map((file) => path.resolve(repoRoot, file));
  const reached = reachableModules(files);
  return {
    postgres: reached.has(helper('postgres-env.ts')),
    kafka: reached.has(helper('kafka-env.ts')),
    kafkaJars: reached.has(helper('kafka.ts')),
    opensearch: reached.has(helper('opensearch-env.ts')),
    opensearchHome: reached.has(helper('opensearch.ts')),
    otelcol: reached.has(helper('otelcol-env.ts')),
    otelcolBinary: reached.has(helper('otelcol.ts')),
  };
}

/**
 * Every module of the repository the files import at run time, themselves included: relative
 * imports, re-exports and dynamic imports, but not `import type` (erased before it runs).
 */
function reachableModules(files: string[]): Set<string> {
  const statement = /\b(?:import|export)\s+(type\s+)?[^;'"]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]/g;
  const bare = /\bimport\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g;
  const seen = new Set<string>();
  const queue = [...files];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue; // not a file of ours (a glob node --test will expand, or a missing file it will report)
    }
    const targets = [
      ...[...text.matchAll(statement)].filter((match) => !match[1]).map((match) => match[2]),
      ...[...text.matchAll(bare)].map((match) => match[1]),
    ];
    for (const target of targets) if (target) queue.push(path.resolve(path.dirname(file), target));
  }
  return seen;
}

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
