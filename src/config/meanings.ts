// What the schema cannot say: JSON Pointers, label selectors, URLs, durations, sizes, names, and the
// rules that tie keys together (a Slack sink's target, one stdout sink). Each check looks only at a value
// of the expected type: a value of the wrong type is the schema's problem, reported there.

import { managerNameProblem } from '../events/filter.ts';
import { labelSelectorProblem } from '../kube/label-selector.ts';
import { resourceNameProblem } from '../kube/resource-names.ts';
import { isJsonObject } from '../kube/types.ts';
import { parseListenAddress } from '../service/health-server.ts';
import { layoutProblem } from '../sinks/layout.ts';
import { isHeaderName, isReservedHeader, isSlackChannel } from '../sinks/receiver-checks.ts';
import { AGE_RULES, checkDuration, type DurationRules } from '../util/duration.ts';
import { hasGlob, namespaceProblem } from '../util/glob.ts';
import { parseSize } from '../util/size.ts';
import { kafkaBrokerProblem, parseHttpUrl } from '../util/url.ts';
import { checkIgnorePath } from './presets.ts';
import type { KeyPath } from './problems.ts';
import type { ConfigInput } from './schema.ts';

export type At = (path: KeyPath, message: string) => void;
export type Shown = (path: KeyPath, value: unknown) => string;

/**
 * Checks what the schema cannot. `config` has passed the schema only where no shape problem was
 * reported: any value may still be of another type than declared, so every check tests the type first.
 */
export function checkMeanings(config: ConfigInput, at: At, shown: Shown): void {
  if (typeof config.selector === 'string') {
    const problem = labelSelectorProblem(config.selector);
    if (problem) at(['selector'], `not a label selector: ${problem}`);
  }
  checkNamespaces(config.namespaces, ['namespaces'], at);
  checkNamespaces(config.excludeNamespaces, ['excludeNamespaces'], at);
  checkResources(config.resources, ['resources'], at);
  checkResources(config.excludeResources, ['excludeResources'], at);
  checkPathRules(config.ignore, ['ignore'], at);
  checkPathRules(config.only, ['only'], at);
  checkPathRules(config.redact, ['redact'], at);
  checkManagers(config.ignoreManagers, ['ignoreManagers'], at);
  checkClusters(config, at);
  if (Array.isArray(config.events) && config.events.length === 0)
    at(['events'], 'expected at least one of added, updated, deleted');
  // A shutdown timeout of 0 is meaningful (exit at once); so are a batch wait and a Slack interval of 0.
  checkDurationKey(config.shutdownTimeout, ['shutdownTimeout'], at, shown, { allowZero: true });
  checkStateRetention(config.state, at, shown);
  checkSize(config.deadLetterMaxSize, ['deadLetterMaxSize'], at, shown);
  checkAudit(config.audit, at, shown);
  if (isJsonObject(config.stories)) {
    checkDurationKey(config.stories.window, ['stories', 'window'], at, shown);
    checkDurationKey(config.stories.maxLength, ['stories', 'maxLength'], at, shown);
  }
  if (!Array.isArray(config.sinks)) return;
  config.sinks.forEach((sink, index) => {
    if (!isJsonObject(sink)) return;
    const here: KeyPath = ['sinks', index];
    const filter = sink.filter;
    if (isJsonObject(filter)) {
      const f: KeyPath = [...here, 'filter'];
      checkNamespaces(filter.namespaces, [...f, 'namespaces'], at);
      checkNamespaces(filter.excludeNamespaces, [...f, 'excludeNamespaces'], at);
      checkResources(filter.resources, [...f, 'resources'], at);
      checkResources(filter.excludeResources, [...f, 'excludeResources'], at);
      checkPathRules(filter.ignore, [...f, 'ignore'], at);
      checkPathRules(filter.only, [...f, 'only'], at);
      checkManagers(filter.managers, [...f, 'managers'], at);
      checkManagers(filter.excludeManagers, [...f, 'excludeManagers'], at);
      if (Array.isArray(filter.events) && filter.events.length === 0)
        at([...f, 'events'], 'expected at least one of added, updated, deleted');
    }
    if (sink.type === 'webhook') {
      checkUrl(sink.url, [...here, 'url'], at, shown);
      checkDurationKey(sink.timeout, [...here, 'timeout'], at, shown);
      checkDurationKey(sink.batchWait, [...here, 'batchWait'], at, shown, { allowZero: true });
      if (sink.batchWait !== undefined && sink.batch === undefined)
        at([...here, 'batchWait'], 'applies to batches: set batch: too (events per request)');
      checkHeaderNames(sink.headers, [...here, 'headers'], at);
      checkWebhookFormat(sink, here, at);
    } else if (sink.type === 'otlp' || sink.type === 'opensearch' || sink.type === 'elasticsearch') {
      checkLogSink(sink, here, at, shown);
    } else if (sink.type === 'slack') {
      checkUrl(sink.webhookUrl, [...here, 'webhookUrl'], at, shown);
      checkUrl(sink.apiUrl, [...here, 'apiUrl'], at, shown);
      checkDurationKey(sink.timeout, [...here, 'timeout'], at, shown);
      checkDurationKey(sink.minInterval, [...here, 'minInterval'], at, shown, { allowZero: true });
      if (sink.webhookUrl !== undefined && (sink.token !== undefined || sink.channel !== undefined)) {
        at(here, 'a Slack sink posts either through webhookUrl or as a bot with token and channel, not both');
      } else if (sink.webhookUrl === undefined && (sink.token === undefined || sink.channel === undefined)) {
        at(
          here,
          sink.token === undefined && sink.channel === undefined
            ? 'a Slack sink needs webhookUrl (an incoming webhook), or token and channel (a bot)'
            : `a Slack bot sink needs both token and channel (${sink.token === undefined ? 'token' : 'channel'} is missing)`,
        );
      }
      if (typeof sink.channel === 'string' && !isSlackChannel(sink.channel))
        at([...here, 'channel'], 'expected a channel ID such as C0123456789, or #name');
    } else if (
      sink.type === 'teams' ||
      sink.type === 'discord' ||
      sink.type === 'mattermost' ||
      sink.type === 'google-chat'
    ) {
      checkUrl(sink.webhookUrl, [...here, 'webhookUrl'], at, shown);
      checkDurationKey(sink.timeout, [...here, 'timeout'], at, shown);
      checkDurationKey(sink.minInterval, [...here, 'minInterval'], at, shown, { allowZero: true });
    } else if (sink.type === 'kafka') {
      checkDurationKey(sink.timeout, [...here, 'timeout'], at, shown);
      checkKafkaBrokers(sink.brokers, [...here, 'brokers'], at, shown);
      const sasl = sink.sasl;
      if (isJsonObject(sasl)) {
        if (sasl.password !== undefined && sasl.passwordFile !== undefined)
          at(
            [...here, 'sasl'],
            'give the password either as password (from an environment variable) or as passwordFile, not both',
          );
        else if (sasl.password === undefined && sasl.passwordFile === undefined)
          at([...here, 'sasl'], 'needs password (from an environment variable) or passwordFile');
      }
      const tls = sink.tls;
      if (isJsonObject(tls) && (tls.certFile === undefined) !== (tls.keyFile === undefined))
        at([...here, 'tls'], 'a client certificate needs both certFile and keyFile');
    }
  });
  const isStdout = (sink: unknown) => isJsonObject(sink) && sink.type === 'stdout';
  if (config.sinks.filter(isStdout).length > 1) {
    const index = config.sinks.findLastIndex(isStdout);
    at(['sinks', index, 'type'], 'only one stdout sink can be listed (stdout is one stream)');
  }
}

function checkHeaderNames(headers: unknown, path: KeyPath, at: At): void {
  for (const name of isJsonObject(headers) ? Object.keys(headers) : []) {
    if (!isHeaderName(name)) at([...path, name], `${JSON.stringify(name)} is not an HTTP header name`);
    else if (isReservedHeader(name)) at([...path, name], `kubediff sets ${name} itself`);
  }
}

/** format, cloudEventsMode and layout: one body at a time, and a layout that compiles. */
function checkWebhookFormat(sink: Record<string, unknown>, here: KeyPath, at: At): void {
  if (sink.layout !== undefined && sink.format === 'cloudevents')
    at([...here, 'layout'], 'a webhook sends either CloudEvents (format: cloudevents) or a layout, not both');
  if (sink.cloudEventsMode !== undefined && sink.format !== 'cloudevents')
    at([...here, 'cloudEventsMode'], 'applies to CloudEvents: set format: cloudevents too');
  if (sink.cloudEventsMode === 'binary' && sink.batch !== undefined)
    at(
      [...here, 'cloudEventsMode'],
      'a batch has no binary mode: use structured (the default), or drop batch',
    );
  if (typeof sink.layout === 'string') {
    const problem = layoutProblem(sink.layout);
    if (problem) at([...here, 'layout'], `not a JSONata expression: ${problem}`);
  }
}

/** OTLP, OpenSearch, Elasticsearch: URLs, durations, headers, TLS, and credentials given once. */
function checkLogSink(sink: Record<string, unknown>, here: KeyPath, at: At, shown: Shown): void {
  const urlKey = sink.type === 'otlp' ? 'endpoint' : 'url';
  checkUrl(sink[urlKey] as string | undefined, [...here, urlKey], at, shown);
  checkDurationKey(sink.timeout as string | undefined, [...here, 'timeout'], at, shown);
  checkHeaderNames(sink.headers, [...here, 'headers'], at);
  const tls = sink.tls;
  if (isJsonObject(tls) && (tls.certFile === undefined) !== (tls.keyFile === undefined))
    at([...here, 'tls'], 'a client certificate needs both certFile and keyFile');
  if (sink.type === 'otlp') return;
  if (typeof sink.index === 'string' && !SEARCH_INDEX.test(sink.index))
    at(
      [...here, 'index'],
      `expected an index name (lowercase letters, digits, '-', '_', '.'; not starting with '-', '_' or '.'), got ${shown([...here, 'index'], sink.index)}`,
    );
  if (sink.password !== undefined && sink.passwordFile !== undefined)
    at(
      [...here, 'password'],
      'give the password either as password (from an environment variable) or as passwordFile, not both',
    );
  if (sink.apiKey !== undefined && sink.apiKeyFile !== undefined)
    at(
      [...here, 'apiKey'],
      'give the API key either as apiKey (from an environment variable) or as apiKeyFile, not both',
    );
  const hasKey = sink.apiKey !== undefined || sink.apiKeyFile !== undefined;
  const hasPassword = sink.password !== undefined || sink.passwordFile !== undefined;
  if (hasKey && (sink.username !== undefined || hasPassword))
    at(here, 'authenticate either with username and password or with an API key, not both');
  else if (hasPassword && sink.username === undefined) at(here, 'a password needs username too');
  else if (sink.username !== undefined && !hasPassword)
    at(here, 'username needs password (from an environment variable) or passwordFile');
}

/** What OpenSearch and Elasticsearch take as an index or data stream name. */
const SEARCH_INDEX = /^[a-z0-9][a-z0-9._-]{0,200}$/;

function checkKafkaBrokers(values: unknown, path: KeyPath, at: At, shown: Shown): void {
  if (!Array.isArray(values)) return;
  values.forEach((broker: unknown, index) => {
    if (typeof broker === 'string' && kafkaBrokerProblem(broker))
      at([...path, index], `expected host:port, got ${shown([...path, index], broker)}`);
  });
}

/** Each string of a list checked by `problemOf`; what it finds is reported at that item as `say` puts it. */
function checkNames(
  values: unknown,
  path: KeyPath,
  at: At,
  problemOf: (name: string) => string | undefined,
  say: (name: string, problem: string) => string = (name, problem) => `${JSON.stringify(name)} is ${problem}`,
): void {
  if (!Array.isArray(values)) return;
  values.forEach((name: unknown, index) => {
    if (typeof name !== 'string') return;
    const problem = problemOf(name);
    if (problem) at([...path, index], say(name, problem));
  });
}

/**
 * `clusters:`: each entry's selection as the top-level keys', but namespaces by exact name (a glob is
 * matched on every cluster's events: it belongs in the top-level `namespaces:`); names given once; and
 * no other way of choosing the clusters beside it.
 */
function checkClusters(config: ConfigInput, at: At): void {
  if (!Array.isArray(config.clusters)) return;
  for (const key of ['context', 'contexts', 'allContexts', 'clusterName'] as const) {
    if (config[key] !== undefined) {
      at(
        [key],
        key === 'clusterName'
          ? 'clusters: names each cluster (its name:); drop clusterName:'
          : `clusters: chooses the clusters to watch; drop ${key}: (or clusters:)`,
      );
    }
  }
  const named = new Map<string, number>();
  config.clusters.forEach((cluster, index) => {
    if (!isJsonObject(cluster)) return;
    const here: KeyPath = ['clusters', index];
    if (typeof cluster.selector === 'string') {
      const problem = labelSelectorProblem(cluster.selector);
      if (problem) at([...here, 'selector'], `not a label selector: ${problem}`);
    }
    for (const key of ['namespaces', 'excludeNamespaces'] as const) {
      checkNames(
        cluster[key],
        [...here, key],
        at,
        (name) =>
          namespaceProblem(name) ??
          (hasGlob(name)
            ? 'a glob: a cluster takes exact names (a glob in the top-level namespaces: applies to every cluster)'
            : undefined),
      );
    }
    checkResources(cluster.resources, [...here, 'resources'], at);
    checkResources(cluster.excludeResources, [...here, 'excludeResources'], at);
    if (typeof cluster.name === 'string') {
      const first = named.get(cluster.name);
      if (first !== undefined) {
        at(
          [...here, 'name'],
          `"${cluster.name}" is the name of clusters[${first}] too; give each cluster a name of its own`,
        );
      } else {
        named.set(cluster.name, index);
      }
    }
  });
}

function checkNamespaces(values: unknown, path: KeyPath, at: At): void {
  checkNames(values, path, at, namespaceProblem);
}

function checkResources(values: unknown, path: KeyPath, at: At): void {
  checkNames(values, path, at, resourceNameProblem, (_name, problem) => problem);
}

function checkManagers(values: unknown, path: KeyPath, at: At): void {
  checkNames(values, path, at, managerNameProblem);
}

function checkPathRules(rules: unknown, path: KeyPath, at: At): void {
  if (!Array.isArray(rules)) return;
  rules.forEach((rule: unknown, index) => {
    const pointer = typeof rule === 'string' ? rule : isJsonObject(rule) ? rule.path : undefined;
    if (typeof pointer !== 'string') return;
    const here: KeyPath = typeof rule === 'string' ? [...path, index] : [...path, index, 'path'];
    try {
      checkIgnorePath(pointer);
    } catch (error) {
      at(here, (error as Error).message);
    }
    if (isJsonObject(rule)) {
      checkResources(rule.resources, [...path, index, 'resources'], at);
      checkManagers(rule.managers, [...path, index, 'managers'], at);
    }
  });
}

function checkStateRetention(state: ConfigInput['state'], at: At, shown: Shown): void {
  if (state === null || typeof state !== 'object') return;
  checkDurationKey(state.maxAge, ['state', 'maxAge'], at, shown, AGE_RULES);
  checkSize(state.maxSize, ['state', 'maxSize'], at, shown);
}

function checkAudit(audit: ConfigInput['audit'], at: At, shown: Shown): void {
  if (!isJsonObject(audit)) return;
  // A wait of 0 is meaningful: join only what has already arrived.
  checkDurationKey(audit.wait, ['audit', 'wait'], at, shown, { allowZero: true });
  checkDurationKey(audit.window, ['audit', 'window'], at, shown);
  checkSize(audit.maxRequestSize, ['audit', 'maxRequestSize'], at, shown);
  if (typeof audit.listen === 'string') {
    try {
      parseListenAddress(audit.listen);
    } catch {
      at(
        ['audit', 'listen'],
        `expected [host]:port such as :8443, got ${shown(['audit', 'listen'], audit.listen)}`,
      );
    }
  }
}

function checkSize(value: string | undefined, path: KeyPath, at: At, shown: Shown): void {
  if (typeof value !== 'string') return;
  try {
    parseSize(path.join('.'), value);
  } catch {
    at(path, `expected a size such as 64MB or 1GB, got ${shown(path, value)}`);
  }
}

function checkDurationKey(
  value: string | undefined,
  path: KeyPath,
  at: At,
  shown: Shown,
  rules?: DurationRules,
): void {
  if (typeof value !== 'string') return;
  const { problem } = checkDuration(value, rules);
  if (problem !== undefined) at(path, `${problem}, got ${shown(path, value)}`);
}

function checkUrl(value: string | undefined, path: KeyPath, at: At, shown: Shown): void {
  if (typeof value !== 'string') return;
  const { problem } = parseHttpUrl(value);
  if (problem?.kind === 'not-a-url')
    at(path, `expected an http:// or https:// URL, got ${shown(path, value)}`);
  else if (problem?.kind === 'scheme')
    at(path, `expected an http:// or https:// URL, not ${problem.url.protocol}//`);
}
