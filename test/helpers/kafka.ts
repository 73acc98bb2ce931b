// A real Apache Kafka broker for the tests: one node in KRaft mode (broker and controller in one JVM),
// from Maven Central's artifacts (test/kafka/pom.xml, fetched into .cache/kafka by
// scripts/kafka-fetch.ts) run with the machine's Java 17, in a fresh temp folder on free 127.0.0.1
// ports. It has four listeners, so that a sink can be tested the ways it will be deployed:
//
//   PLAINTEXT        no authentication, no TLS (most tests)
//   SASL_PLAINTEXT   SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, one user per mechanism
//   SSL              TLS with a throwaway CA (pki.ts); a client certificate is accepted, not required
//   SASL_SSL         both
//
// scripts/run-tests.ts starts one per `npm test` run when a selected test file needs it and describes
// it to the test processes as a JSON KafkaInfo (see kafka-env.ts). That broker is shared by the test
// files running side by side, so no test may stop it: a test that stops and restarts the broker
// starts its own with startKafka(); `stopServer()`/`startServer()` (a RestartableServer,
// server-process.ts) keep its data folder and ports.
//
// The console tools of the same classpath (kafka-topics, console producer and consumer) are the
// harness's client: createTopic(), produce() and consume() below, a neutral reader of what a sink wrote.
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from './cluster.ts';
import { makeTestPki } from './pki.ts';
import {
  type CommandResult,
  freePorts,
  launchProcess,
  type ManagedProcess,
  retryOnPortInUse,
  runCommand,
  type ServerFiles,
  type ServerOptions,
  startFailure,
  tcpAccepts,
  terminate,
  waitUntil,
} from './processes.ts';
import { type RestartableServer, ServerProcess } from './server-process.ts';

export const kafkaPom = path.join(repoRoot, 'test', 'kafka', 'pom.xml');
export const kafkaCacheDir = path.join(repoRoot, '.cache', 'kafka');

export type KafkaListener = 'PLAINTEXT' | 'SASL_PLAINTEXT' | 'SSL' | 'SASL_SSL';
export type SaslMechanism = 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
export const SASL_MECHANISMS: readonly SaslMechanism[] = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'];

export interface KafkaCredentials {
  username: string;
  password: string;
}

/** Everything a test needs to reach the broker; JSON-serialisable. */
export interface KafkaInfo extends ServerFiles {
  /** true for a broker given by KUBEDIFF_TEST_KAFKA_BROKERS: nothing was started, nothing will be stopped. */
  external: boolean;
  /** The Kafka version of our own broker ('unknown' for an existing one). */
  version: string;
  /** host:port of the PLAINTEXT listener (a bootstrap list for an existing broker). */
  brokers: string;
  /** host:port of each listener; an existing broker has PLAINTEXT only. */
  listeners: Partial<Record<KafkaListener, string>>;
  /** The user of each SASL mechanism (SASL_PLAINTEXT and SASL_SSL); absent for an existing broker. */
  users?: Record<SaslMechanism, KafkaCredentials>;
  /** PEM of the CA of the TLS listeners' certificate (for 127.0.0.1 and localhost), and as a file. */
  caPem?: string;
  caFile?: string;
  /** A client certificate and key signed by that CA (the SSL listeners accept but do not require one). */
  clientCert?: string;
  clientKey?: string;
}

/** stopServer() is a controlled shutdown; startServer() resolves once the broker serves every listener. */
export type RunningKafka = KafkaInfo & RestartableServer;

/** startTimeoutMs: default 120 s (a JVM on a busy 2-core machine is slow to start); settings: broker
 * settings; label: default kafka-<PLAINTEXT port>. */
export type StartKafkaOptions = ServerOptions;

// ---------------------------------------------------------------------------------------------------
// The classpath

/** The Kafka version test/kafka/pom.xml asks for. */
export function kafkaVersion(): string {
  const pom = readFileSync(kafkaPom, 'utf8');
  const version = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom)?.[1];
  if (!version) throw new Error(`${path.relative(repoRoot, kafkaPom)} names no <kafka.version>`);
  return version;
}

/** .cache/kafka/<version>-<sha256 of the pom>: a changed pom is a new folder, fetched anew. */
export function kafkaCacheEntry(): string {
  const stamp = createHash('sha256').update(readFileSync(kafkaPom)).digest('hex').slice(0, 12);
  return path.join(kafkaCacheDir, `${kafkaVersion()}-${stamp}`);
}

/** The folder of the broker's and tools' jars, or an Error saying how to fetch them. */
export function kafkaLibsDir(): string {
  const libs = path.join(kafkaCacheEntry(), 'libs');
  if (!existsSync(libs) || !readdirSync(libs).some((file) => file.endsWith('.jar'))) {
    throw new Error(
      `the Kafka jars are not in ${path.relative(repoRoot, libs)}: run \`npm run kafka:fetch\` (npm test does it when a test needs Kafka).`,
    );
  }
  return libs;
}

/** $JAVA_HOME/bin/java, else java on PATH; checked to be Java 17 or newer (Kafka 4 brokers need it). */
export function javaBinary(env: NodeJS.ProcessEnv = process.env): string {
  const java = env.JAVA_HOME ? path.join(env.JAVA_HOME, 'bin', 'java') : 'java';
  const result = spawnSync(java, ['-version'], { encoding: 'utf8' });
  const hint = 'install Java 17 or newer (Debian: apt-get install openjdk-17-jre-headless; .ci/run does)';
  if (result.error)
    throw new Error(`cannot run ${java} for the Kafka broker (${result.error.message}); ${hint}.`);
  const major = Number(/version "(\d+)/.exec(result.stderr)?.[1]);
  if (!(major >= 17)) {
    throw new Error(
      `${java} is Java ${Number.isFinite(major) ? major : 'of an unknown version'}; Kafka ${kafkaVersion()} needs 17 or newer: ${hint}.`,
    );
  }
  return java;
}

/**
 * JVM options of the console tools: short-lived, so a quick start beats peak speed (C1 only, serial
 * GC, small heap); warnings only, to stderr (slf4j-simple).
 */
const TOOL_JVM_OPTIONS = [
  '-XX:TieredStopAtLevel=1',
  '-XX:+UseSerialGC',
  '-Xmx256m',
  '-Djava.awt.headless=true',
  '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
];

/**
 * JVM options of the broker: a bounded heap and one GC thread on a shared 2-core machine; the log at
 * warning level, plus the lines that say the servers started and stopped.
 */
const BROKER_JVM_OPTIONS = [
  '-Xms256m',
  '-Xmx768m',
  '-XX:+UseSerialGC',
  '-XX:+ExitOnOutOfMemoryError',
  '-Djava.awt.headless=true',
  '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
  '-Dorg.slf4j.simpleLogger.log.kafka.server.KafkaRaftServer=info',
  '-Dorg.slf4j.simpleLogger.log.kafka.server.BrokerServer=info',
  '-Dorg.slf4j.simpleLogger.log.kafka.server.ControllerServer=info',
  '-Dorg.slf4j.simpleLogger.showDateTime=true',
  '-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS',
];
/** What the broker logs once every listener is open and it is unfenced (KafkaRaftServer.startup). */
const STARTED_LINE = 'Kafka Server started';

// ---------------------------------------------------------------------------------------------------
// The broker

/** Starts a broker of our own; see the file comment. */
export async function startKafka(options: StartKafkaOptions = {}): Promise<RunningKafka> {
  return retryOnPortInUse('kafka', () => startOwnKafka(options), options.log);
}

async function startOwnKafka(options: StartKafkaOptions): Promise<RunningKafka> {
  const log = options.log ?? (() => {});
  const startedAt = performance.now();
  const timeoutMs = options.startTimeoutMs ?? 120_000;
  const java = javaBinary();
  const libs = kafkaLibsDir();
  const version = kafkaVersion();
  const classpath = path.join(libs, '*');
  const tmpRoot = options.tmpRoot ?? tmpdir();
  await mkdir(tmpRoot, { recursive: true });
  const dir = await mkdtemp(path.join(tmpRoot, 'kubediff-kafka-'));
  const processes: ManagedProcess[] = [];

  try {
    const [plaintext, sasl, ssl, saslSsl, controller] = (await freePorts(5)) as [
      number,
      number,
      number,
      number,
      number,
    ];
    const address = (port: number) => `127.0.0.1:${port}`;
    const listeners: Record<KafkaListener, string> = {
      PLAINTEXT: address(plaintext),
      SASL_PLAINTEXT: address(sasl),
      SSL: address(ssl),
      SASL_SSL: address(saslSsl),
    };
    const secret = () => randomBytes(12).toString('hex');
    // Underscores, not dashes: a JAAS option name (user_<name>) is a plain word.
    const users: Record<SaslMechanism, KafkaCredentials> = {
      PLAIN: { username: 'kubediff_plain', password: secret() },
      'SCRAM-SHA-256': { username: 'kubediff_scram256', password: secret() },
      'SCRAM-SHA-512': { username: 'kubediff_scram512', password: secret() },
    };

    const pki = makeTestPki();
    const tlsDir = path.join(dir, 'tls');
    await mkdir(tlsDir, { mode: 0o700 });
    const caFile = path.join(tlsDir, 'ca.crt');
    const keystoreFile = path.join(tlsDir, 'server.pem');
    await writeFile(caFile, pki.caPem);
    // A PEM keystore: the (unencrypted PKCS#8) key and the certificate in one file.
    await writeFile(keystoreFile, `${pki.serverKey.trim()}\n${pki.serverCert.trim()}\n`, { mode: 0o600 });

    const plainJaas = `org.apache.kafka.common.security.plain.PlainLoginModule required user_${users.PLAIN.username}="${users.PLAIN.password}";`;
    const scramJaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required;';
    const saslSettings = (listener: string) => ({
      [`listener.name.${listener}.sasl.enabled.mechanisms`]: SASL_MECHANISMS.join(','),
      [`listener.name.${listener}.plain.sasl.jaas.config`]: plainJaas,
      [`listener.name.${listener}.scram-sha-256.sasl.jaas.config`]: scramJaas,
      [`listener.name.${listener}.scram-sha-512.sasl.jaas.config`]: scramJaas,
    });
    const settings: Record<string, string> = {
      'process.roles': 'broker,controller',
      'node.id': '1',
      'controller.quorum.voters': `1@${address(controller)}`,
      'controller.listener.names': 'CONTROLLER',
      listeners: [
        ...Object.entries(listeners).map(([name, at]) => `${name}://${at}`),
        `CONTROLLER://${address(controller)}`,
      ].join(','),
      'advertised.listeners': Object.entries(listeners)
        .map(([name, at]) => `${name}://${at}`)
        .join(','),
      'listener.security.protocol.map':
        'PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT',
      'inter.broker.listener.name': 'PLAINTEXT',
      'log.dirs': path.join(dir, 'data'),
      // Tests create their topics (as production clusters usually require); a typo is an error, not a new topic.
      'auto.create.topics.enable': 'false',
      'num.partitions': '1',
      // One node: every internal topic with one replica, and small, so that the first consumer group
      // or transaction does not wait for fifty partitions to be created.
      'offsets.topic.replication.factor': '1',
      'offsets.topic.num.partitions': '1',
      'transaction.state.log.replication.factor': '1',
      'transaction.state.log.min.isr': '1',
      'transaction.state.log.num.partitions': '1',
      'share.coordinator.state.topic.replication.factor': '1',
      'share.coordinator.state.topic.min.isr': '1',
      'group.initial.rebalance.delay.ms': '0',
      ...saslSettings('sasl_plaintext'),
      ...saslSettings('sasl_ssl'),
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.location': keystoreFile,
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': caFile,
      'ssl.client.auth': 'requested',
      ...options.settings,
    };
    const configFile = path.join(dir, 'server.properties');
    await writeFile(configFile, propertiesText(settings), { mode: 0o600 });

    // Format the metadata log: a cluster id (a Kafka Uuid is 16 bytes in URL-safe base64) and the
    // SCRAM users, which KRaft stores in the metadata log itself.
    // One that starts with '-' would be read as an option (1 start in 64 failed so): Kafka's own
    // Uuid.randomUuid() avoids those too.
    let clusterId = randomBytes(16).toString('base64url');
    while (clusterId.startsWith('-')) clusterId = randomBytes(16).toString('base64url');
    const scram = (['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const).flatMap((mechanism) => [
      '--add-scram',
      `${mechanism}=[name=${users[mechanism].username},password=${users[mechanism].password}]`,
    ]);
    log(`kafka: formatting ${path.join(dir, 'data')} (Kafka ${version})`);
    const format = launchProcess({
      name: 'kafka-storage-format',
      binary: java,
      args: [
        ...TOOL_JVM_OPTIONS,
        '-cp',
        classpath,
        'kafka.tools.StorageTool',
        'format',
        '-t',
        clusterId,
        '-c',
        configFile,
        ...scram,
      ],
      dir,
    });
    processes.push(format);
    await format.exited;
    if (format.spawnError || format.exit?.code !== 0) {
      throw new Error(
        `kafka-storage format failed (${format.spawnError?.message ?? `exit code ${format.exit?.code}`})`,
      );
    }

    const logFile = path.join(dir, 'kafka.log');
    const launchBroker = async () => {
      // Only what this start logs counts: a restart appends to the same log.
      const from = await fileSize(logFile);
      const p = launchProcess({
        name: 'kafka',
        binary: java,
        args: [...BROKER_JVM_OPTIONS, `-Djava.io.tmpdir=${dir}`, '-cp', classpath, 'kafka.Kafka', configFile],
        dir,
      });
      processes.splice(0, processes.length, p);
      await waitUntil(
        `the Kafka broker to start (${STARTED_LINE})`,
        async () => {
          const text = await readFrom(logFile, from);
          if (!text.includes(STARTED_LINE)) return 'not started yet';
          for (const [name, at] of Object.entries(listeners)) {
            if (!(await tcpAccepts(at))) return `${name} ${at} refuses connections`;
          }
          return true;
        },
        { deadline: Date.now() + timeoutMs, processes, intervalMs: 100 },
      );
      return p;
    };
    const broker = new ServerProcess({ dir, launch: launchBroker, graceMs: 30_000 });
    log(
      `kafka: starting the broker on ${listeners.PLAINTEXT} (PLAINTEXT), ${listeners.SASL_PLAINTEXT} (SASL), ${listeners.SSL} (TLS), ${listeners.SASL_SSL} (SASL+TLS)`,
    );
    await broker.start();
    log(
      `kafka: ${version} ready in ${((performance.now() - startedAt) / 1000).toFixed(1)}s at ${listeners.PLAINTEXT}`,
    );

    const info: KafkaInfo & { logFile: string } = {
      external: false,
      version,
      brokers: listeners.PLAINTEXT,
      listeners,
      users,
      caPem: pki.caPem,
      caFile,
      clientCert: pki.clientCert,
      clientKey: pki.clientKey,
      dir,
      logFile,
      pid: broker.pid,
    };
    return broker.controls(info, options, `kafka-${plaintext}`);
  } catch (error) {
    throw await startFailure('the Kafka broker', error, processes, async () => {
      for (const p of processes) await terminate(p);
      await rm(dir, { recursive: true, force: true });
    });
  }
}

/** A Java .properties file; values escaped so that backslashes and line breaks survive. */
function propertiesText(settings: Record<string, string>): string {
  const escaped = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
  return `${Object.entries(settings)
    .map(([key, value]) => `${key}=${escaped(value)}`)
    .join('\n')}\n`;
}

async function fileSize(file: string): Promise<number> {
  try {
    const handle = await open(file, 'r');
    try {
      return (await handle.stat()).size;
    } finally {
      await handle.close();
    }
  } catch {
    return 0;
  }
}

async function readFrom(file: string, offset: number): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const buffer = Buffer.alloc(Math.max(0, size - offset));
    await handle.read(buffer, 0, buffer.length, offset);
    return buffer.toString('utf8');
  } finally {
    await handle.close();
  }
}

// ---------------------------------------------------------------------------------------------------
// The console tools, as the harness's client

export interface KafkaClient {
  /** Which listener to use; default PLAINTEXT. */
  listener?: KafkaListener;
  /** For SASL listeners: the mechanism (default SCRAM-SHA-512) and its user from the info... */
  mechanism?: SaslMechanism;
  /** ...or other credentials (a wrong password, to see it refused). */
  credentials?: KafkaCredentials;
}

/** Client settings (Java client property names) for a listener of the broker. */
export function clientProperties(info: KafkaInfo, client: KafkaClient = {}): Record<string, string> {
  const listener = client.listener ?? 'PLAINTEXT';
  const properties: Record<string, string> = { 'security.protocol': listener };
  if (listener === 'SSL' || listener === 'SASL_SSL') {
    if (!info.caFile) throw new Error(`this Kafka broker has no ${listener} listener`);
    properties['ssl.truststore.type'] = 'PEM';
    properties['ssl.truststore.location'] = info.caFile;
  }
  if (listener === 'SASL_PLAINTEXT' || listener === 'SASL_SSL') {
    const mechanism = client.mechanism ?? 'SCRAM-SHA-512';
    const credentials = client.credentials ?? info.users?.[mechanism];
    if (!credentials) throw new Error(`this Kafka broker has no ${mechanism} user`);
    const module =
      mechanism === 'PLAIN'
        ? 'org.apache.kafka.common.security.plain.PlainLoginModule'
        : 'org.apache.kafka.common.security.scram.ScramLoginModule';
    properties['sasl.mechanism'] = mechanism;
    properties['sasl.jaas.config'] =
      `${module} required username=${JSON.stringify(credentials.username)} password=${JSON.stringify(credentials.password)};`;
  }
  return properties;
}

/**
 * Runs a Kafka command-line tool (by main class) against the broker through `client`'s listener:
 * --bootstrap-server and --command-config are added. Resolves to its exit code and output.
 */
export async function kafkaTool(
  info: KafkaInfo,
  mainClass: string,
  args: string[],
  options: { client?: KafkaClient; input?: string; timeoutMs?: number } = {},
): Promise<CommandResult> {
  const listener = options.client?.listener ?? 'PLAINTEXT';
  const bootstrap = info.listeners[listener];
  if (!bootstrap)
    throw new Error(`this Kafka broker has no ${listener} listener (an existing broker has PLAINTEXT only)`);
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-kafka-client-'));
  try {
    const configFile = path.join(dir, 'client.properties');
    await writeFile(configFile, propertiesText(clientProperties(info, options.client)), { mode: 0o600 });
    return await runCommand(
      javaBinary(),
      [
        ...TOOL_JVM_OPTIONS,
        '-cp',
        path.join(kafkaLibsDir(), '*'),
        mainClass,
        '--bootstrap-server',
        bootstrap,
        '--command-config',
        configFile,
        ...args,
      ],
      { input: options.input, timeoutMs: options.timeoutMs ?? 120_000, cwd: dir },
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function toolFailure(what: string, result: CommandResult): Error {
  const output = `${result.stderr}\n${result.stdout}`.trim().split('\n').slice(-15).join('\n');
  return new Error(`${what} failed (exit code ${result.code}):\n${output}`);
}

/** Creates a topic (kafka-topics --create); `config` as topic-level settings. */
export async function createTopic(
  info: KafkaInfo,
  topic: string,
  options: { partitions?: number; config?: Record<string, string>; client?: KafkaClient } = {},
): Promise<void> {
  const config = Object.entries(options.config ?? {}).flatMap(([key, value]) => [
    '--config',
    `${key}=${value}`,
  ]);
  const result = await kafkaTool(
    info,
    'org.apache.kafka.tools.TopicCommand',
    [
      '--create',
      '--topic',
      topic,
      '--partitions',
      String(options.partitions ?? 1),
      '--replication-factor',
      '1',
      ...config,
    ],
    { client: options.client },
  );
  if (result.code !== 0) throw toolFailure(`creating topic ${topic}`, result);
}

export interface KafkaRecord {
  partition: number;
  offset: number;
  /** null for a record without key. */
  key: string | null;
  value: string;
  /** [name, value] in order; the console consumer prints name:value, so a name with ':' reads wrong. */
  headers: Array<[string, string]>;
}

// Separators that JSON text never holds raw: ASCII unit, record and group separators.
const FIELD = '\u001f';
const RECORD = '\u001e';
const HEADER = '\u001d';
const HEADER_KEY = '\u001c';
/** How the consumer prints a missing key (the ASCII 'cancel' character, which no real key holds). */
const NULL = '\u0018';

/** Between a produced line's headers and its key (the ASCII 'end of transmission block'). */
const HEADERS_END = '\u0017';

/**
 * Produces records with the console producer (acks=all), in order: one line each, so keys, values
 * and headers must not hold line breaks (JSON lines never do). Resolves once every record is
 * acknowledged.
 */
export async function produce(
  info: KafkaInfo,
  topic: string,
  records: ProducedRecord[],
  options: { client?: KafkaClient } = {},
): Promise<void> {
  const separators = [FIELD, RECORD, HEADER, HEADER_KEY, NULL, HEADERS_END];
  for (const record of records) {
    const text = [record.key ?? '', record.value, ...(record.headers ?? []).flat()].join('');
    if (/[\r\n]/.test(text) || separators.some((separator) => text.includes(separator))) {
      throw new Error(
        'produce(): a key, value or header holds a line break or an ASCII control character, which the console producer cannot carry',
      );
    }
  }
  // The console producer reads headers on every line or on none: consecutive records with and
  // without headers go in separate runs, one after the other, so the order holds.
  let start = 0;
  while (start < records.length) {
    const withHeaders = hasHeaders(records[start]);
    let end = start + 1;
    while (end < records.length && hasHeaders(records[end]) === withHeaders) end++;
    await produceRun(info, topic, records.slice(start, end), withHeaders, options.client);
    start = end;
  }
}

type ProducedRecord = { key?: string; value: string; headers?: Array<[string, string]> };

function hasHeaders(record: ProducedRecord | undefined): boolean {
  return (record?.headers ?? []).length > 0;
}

async function produceRun(
  info: KafkaInfo,
  topic: string,
  records: ProducedRecord[],
  withHeaders: boolean,
  client: KafkaClient | undefined,
): Promise<void> {
  const keyed = records.some((record) => record.key !== undefined);
  const reader = {
    ...(keyed ? { 'parse.key': 'true', 'key.separator': FIELD, 'null.marker': NULL } : {}),
    ...(withHeaders
      ? {
          'parse.headers': 'true',
          'headers.delimiter': HEADERS_END,
          'headers.separator': HEADER,
          'headers.key.separator': HEADER_KEY,
        }
      : {}),
  };
  const line = (record: ProducedRecord) => {
    const headers = withHeaders
      ? `${(record.headers ?? []).map(([name, value]) => `${name}${HEADER_KEY}${value}`).join(HEADER)}${HEADERS_END}`
      : '';
    const key = keyed ? `${record.key ?? NULL}${FIELD}` : '';
    return `${headers}${key}${record.value}\n`;
  };
  const result = await kafkaTool(
    info,
    'org.apache.kafka.tools.ConsoleProducer',
    [
      '--topic',
      topic,
      '--request-required-acks',
      'all',
      ...Object.entries(reader).flatMap(([name, value]) => ['--reader-property', `${name}=${value}`]),
    ],
    { client, input: records.map(line).join('') },
  );
  // The console producer exits 0 even when a send failed; it says so on stderr. A WARN line (a retried
  // NOT_LEADER_OR_FOLLOWER while a new topic's leader settles, say) is not a failure: the send was retried.
  const failed = result.stderr.split('\n').filter((text) => !/\sWARN\s/.test(text));
  if (result.code !== 0 || failed.some((text) => /ERROR|Exception/.test(text)))
    throw toolFailure(`producing to ${topic}`, result);
}

/**
 * Reads a topic from the beginning with the console consumer (a fresh consumer group each time) until
 * `count` records have arrived, or none for idleTimeoutMs (default 30 s): resolves to what it read,
 * in the order it read them (per partition, in offset order). The caller asserts on the count.
 */
export async function consume(
  info: KafkaInfo,
  topic: string,
  options: { count: number; client?: KafkaClient; idleTimeoutMs?: number },
): Promise<KafkaRecord[]> {
  const formatter = [
    'print.partition=true',
    'print.offset=true',
    'print.headers=true',
    'print.key=true',
    'print.value=true',
    'print.timestamp=false',
    `key.separator=${FIELD}`,
    `line.separator=${RECORD}`,
    `headers.separator=${HEADER}`,
    `null.literal=${NULL}`,
  ].flatMap((property) => ['--formatter-property', property]);
  const idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
  const result = await kafkaTool(
    info,
    'org.apache.kafka.tools.consumer.ConsoleConsumer',
    [
      '--topic',
      topic,
      '--from-beginning',
      '--group',
      `kubediff-test-${randomBytes(6).toString('hex')}`,
      '--max-messages',
      String(options.count),
      '--timeout-ms',
      String(idleTimeoutMs),
      ...formatter,
    ],
    { client: options.client, timeoutMs: idleTimeoutMs + 120_000 },
  );
  // Fewer records than asked (the idle timeout) is for the caller to judge; anything else is a failure.
  if (result.code !== 0 && !/TimeoutException/.test(result.stderr))
    throw toolFailure(`consuming ${topic}`, result);
  return result.stdout
    .split(RECORD)
    .filter((text) => text.length > 0)
    .map((text) => parseRecord(text));
}

function parseRecord(text: string): KafkaRecord {
  // Partition:<p> FIELD Offset:<o> FIELD <headers> FIELD <key> FIELD <value>
  const [partition, offset, headers, key, ...value] = text.split(FIELD);
  const number = (field: string | undefined, name: string) => Number(field?.slice(`${name}:`.length));
  return {
    partition: number(partition, 'Partition'),
    offset: number(offset, 'Offset'),
    headers:
      headers === undefined || headers === 'NO_HEADERS'
        ? []
        : headers.split(HEADER).map((header) => {
            // The console consumer always writes name:value, so a header name must not hold a ':'.
            const at = header.indexOf(':');
            return [header.slice(0, at), header.slice(at + 1)] as [string, string];
          }),
    key: key === undefined || key === NULL ? null : key,
    value: value.join(FIELD),
  };
}
