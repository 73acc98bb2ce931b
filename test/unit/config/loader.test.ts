// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} is the config file syntax under test.
// The config loader, table-driven over a corpus of broken files (test/fixtures/config): every message is
// asserted whole, with its line and column. Also: ${VAR} substitution, presets, flags over the file.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { EXIT_USAGE, exitCodeOf } from '../../../src/cli/exit-codes.ts';
import { loadConfigFile, parseConfig } from '../../../src/config/file.ts';
import { PRESETS, presetIgnoredPaths } from '../../../src/config/presets.ts';
import { ConfigError } from '../../../src/config/problems.ts';
import { loadWatchSettings, settingsFromConfig } from '../../../src/config/settings.ts';
import { substitute } from '../../../src/config/substitution.ts';
import { DEFAULT_IGNORED_PATHS } from '../../../src/diff/ignore.ts';
import { UsageError } from '../../../src/util/errors.ts';
import { nonEmpty } from '../../helpers/non-empty.ts';

const FIXTURES = path.join(import.meta.dirname, '../../fixtures/config');
/** The environment of every corpus case: values that must never appear in a message. */
const ENV = { HOOK_URL: 'not-a-url-s3cr3t', HOOK_TIMEOUT: 'forever-s3cr3t' };

function problemsOf(file: string, env: Record<string, string> = ENV): string[] {
  try {
    loadConfigFile(path.join(FIXTURES, file), env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, `${file}: ${String(error)}`);
    assert.equal(exitCodeOf(error), EXIT_USAGE);
    return error.message.replaceAll(`${FIXTURES}/`, '').split('\n');
  }
  assert.fail(`${file} was accepted`);
}

const CORPUS: [string, string[]][] = [
  [
    'bad-events.yaml',
    [
      'invalid config file bad-events.yaml: 2 problems:',
      '  bad-events.yaml:1:17: events[1]: expected one of added, updated, deleted, got "changed"',
      '  bad-events.yaml:5:16: sinks[0].filter.events[0]: expected one of added, updated, deleted, outcome, got "modified"',
    ],
  ],
  [
    'bad-names.yaml',
    [
      'invalid config file bad-names.yaml: 4 problems:',
      '  bad-names.yaml:1:14: namespaces[0]: "Shop" is not a namespace name: use lowercase letters, digits and \'-\' (globs: * and ?)',
      '  bad-names.yaml:1:30: namespaces[2]: "bad_ns" is not a namespace name: use lowercase letters, digits and \'-\' (globs: * and ?)',
      '  bad-names.yaml:2:20: excludeResources[0]: "deploy ments" is not a resource name: use a plural such as configmaps or deployments.apps, a short name such as deploy, or *.example.com',
      '  bad-names.yaml:7:19: sinks[0].filter.resources[0]: "pods/log" is not a resource name: use a plural such as configmaps or deployments.apps, a short name such as deploy, or *.example.com',
    ],
  ],
  [
    'bad-paths.yaml',
    [
      'invalid config file bad-paths.yaml: 4 problems:',
      '  bad-paths.yaml:2:5: ignore[0]: "spec/replicas" is not a JSON Pointer: it must start with "/" (for example /spec/replicas)',
      '  bad-paths.yaml:3:5: ignore[1]: "" is the whole object; name a field such as /spec/replicas',
      '  bad-paths.yaml:4:11: ignore[2].path: "/metadata/annotations/a~2b" is not a JSON Pointer: "~" must be followed by 0 or 1 (write ~0 for "~" and ~1 for "/")',
      '  bad-paths.yaml:8:11: only[1].path: "status" is not a JSON Pointer: it must start with "/" (for example /status)',
    ],
  ],
  [
    'bad-redact.yaml',
    [
      'invalid config file bad-redact.yaml: 5 problems:',
      '  bad-redact.yaml:2:5: redact[0]: "data/password" is not a JSON Pointer: it must start with "/" (for example /data/password)',
      '  bad-redact.yaml:3:5: redact[1]: "" is the whole object; name a field such as /spec/replicas',
      '  bad-redact.yaml:5:17: redact[2].resources[0]: "config maps" is not a resource name: use a plural such as configmaps or deployments.apps, a short name such as deploy, or *.example.com',
      '  bad-redact.yaml:7:5: redact[3].resource: unknown key (did you mean resources?)',
      '  bad-redact.yaml:9:16: redact[4].resources: expected a list, got "widgets"',
    ],
  ],
  [
    'bad-selector.yaml',
    [
      'invalid config file bad-selector.yaml:1:11: selector: not a label selector: "app in (web" is not a valid requirement (use key, !key, key=value, key!=value, key in (a,b) or key notin (a,b)).',
    ],
  ],
  [
    'bad-urls.yaml',
    [
      'invalid config file bad-urls.yaml: 8 problems:',
      '  bad-urls.yaml:3:10: sinks[0].url: expected an http:// or https:// URL, not ftp://',
      '  bad-urls.yaml:5:17: sinks[1].webhookUrl: expected an http:// or https:// URL, got "hooks.slack.com/…"',
      '  bad-urls.yaml:8:14: sinks[2].timeout: expected a duration such as 500ms, 30s, 5m, 2h or 7d, got "soon"',
      '  bad-urls.yaml:9:16: sinks[2].batchWait: applies to batches: set batch: too (events per request)',
      '  bad-urls.yaml:12:13: sinks[3].secret: expected a string, got a number',
      '  bad-urls.yaml:14:16: sinks[3].headers.X-Token: expected a string, got a number',
      '  bad-urls.yaml:17:17: sinks[4].batchBytes: applies to batches: set batch: too (events per request)',
      '  bad-urls.yaml:21:17: sinks[5].batchBytes: expected a size such as 64MB or 1GB, got "lots"',
    ],
  ],
  [
    'bad-yaml.yaml',
    [
      'invalid config file bad-yaml.yaml:2:1: not valid YAML: Flow sequence in block collection must be sufficiently indented and end with a ].',
    ],
  ],
  [
    'duplicate-key.yaml',
    ['invalid config file duplicate-key.yaml:3:1: not valid YAML: a key appears twice in the same mapping.'],
  ],
  [
    'filter-typos.yaml',
    [
      'invalid config file filter-typos.yaml: 3 problems:',
      '  filter-typos.yaml:5:7: sinks[0].filter.namespces: unknown key (did you mean namespaces?)',
      '  filter-typos.yaml:9:11: sinks[0].filter.only[0].resource: unknown key (did you mean resources?)',
      '  filter-typos.yaml:10:7: sinks[0].filter.ignor: unknown key (did you mean ignore?)',
    ],
  ],
  [
    'kafka-and-chat.yaml',
    [
      'invalid config file kafka-and-chat.yaml: 10 problems:',
      '  kafka-and-chat.yaml:3:29: sinks[0].brokers[1]: expected host:port, got "kafka-1"',
      '  kafka-and-chat.yaml:3:40: sinks[0].brokers[2]: expected host:port, got "[::1]:99999"',
      '  kafka-and-chat.yaml:5:18: sinks[0].compression: expected one of none, gzip, snappy, lz4, zstd, got "brotli"',
      '  kafka-and-chat.yaml:6:11: sinks[0].sasl: needs password (from an environment variable) or passwordFile',
      '  kafka-and-chat.yaml:7:10: sinks[0].tls: a client certificate needs both certFile and keyFile',
      '  kafka-and-chat.yaml:11:11: sinks[1].sasl: give the password either as password (from an environment variable) or as passwordFile, not both',
      "  kafka-and-chat.yaml:11:11: sinks[1].sasl: the credentials would cross the network unencrypted (SASL without TLS): add tls (the brokers' TLS listener), or allowPlaintextCredentials: true if the network is encrypted otherwise",
      '  kafka-and-chat.yaml:13:17: sinks[2].webhookUrl: expected an http:// or https:// URL, not ftp://',
      '  kafka-and-chat.yaml:14:5: sinks[3]: missing key webhookUrl',
      '  kafka-and-chat.yaml:17:18: sinks[4].minInterval: expected a duration such as 500ms, 30s, 5m, 2h or 7d, got "soon"',
    ],
  ],
  [
    'log-sinks.yaml',
    [
      'invalid config file log-sinks.yaml: 15 problems:',
      '  log-sinks.yaml:3:15: sinks[0].endpoint: expected an http:// or https:// URL, not grpc://',
      '  log-sinks.yaml:4:15: sinks[0].protocol: expected one of http/protobuf, http/json, got "grpc"',
      '  log-sinks.yaml:5:30: sinks[0].headers.Bad Header: "Bad Header" is not an HTTP header name',
      '  log-sinks.yaml:5:47: sinks[0].headers.Content-Type: kubediff sets Content-Type itself',
      '  log-sinks.yaml:6:10: sinks[0].tls: a client certificate needs both certFile and keyFile',
      '  log-sinks.yaml:7:5: sinks[1]: username needs password (from an environment variable) or passwordFile',
      `  log-sinks.yaml:9:12: sinks[1].index: expected an index name (lowercase letters, digits, '-', '_', '.'; not starting with '-', '_' or '.'), got "Kubediff"`,
      '  log-sinks.yaml:10:11: sinks[1].mode: expected one of daily, data-stream, got "weekly"',
      '  log-sinks.yaml:12:5: sinks[2]: authenticate either with username and password or with an API key, not both',
      '  log-sinks.yaml:19:22: sinks[3].cloudEventsMode: a batch has no binary mode: use structured (the default), or drop batch',
      '  log-sinks.yaml:21:13: sinks[3].layout: a webhook sends either CloudEvents (format: cloudevents) or a layout, not both',
      '  log-sinks.yaml:21:13: sinks[3].layout: not a JSONata expression: S0211 The symbol "}" cannot be used as a unary operator (at character 8)',
      '  log-sinks.yaml:24:22: sinks[4].cloudEventsMode: applies to CloudEvents: set format: cloudevents too',
      '  log-sinks.yaml:27:5: sinks[5].stories: unknown key; expected one of type, name, filter, timeout, deadLetter, headers, headersFile, tls, batch, batchBytes, queueCapacity, endpoint, protocol',
      '  log-sinks.yaml:28:17: sinks[5].batchBytes: expected a size such as 64MB or 1GB, got "lots"',
    ],
  ],
  [
    'missing-env.yaml',
    [
      'invalid config file missing-env.yaml: 3 problems:',
      '  missing-env.yaml:4:17: sinks[0].webhookUrl: environment variable SLACK_WEBHOOK_URL is not set (set it, or give a default: ${SLACK_WEBHOOK_URL:-value})',
      '  missing-env.yaml:6:10: sinks[1].url: environment variable HOOK_PATH is not set (set it, or give a default: ${HOOK_PATH:-value})',
      '  missing-env.yaml:8:22: sinks[1].headers.Authorization: environment variable HOOK_TOKEN is not set (set it, or give a default: ${HOOK_TOKEN:-value})',
    ],
  ],
  [
    'not-a-mapping.yaml',
    [
      'invalid config file not-a-mapping.yaml:1:1: expected a mapping of keys such as namespaces: and sinks:, got a list.',
    ],
  ],
  [
    'secret-echo.yaml',
    [
      'invalid config file secret-echo.yaml: 2 problems:',
      '  secret-echo.yaml:3:10: sinks[0].url: expected an http:// or https:// URL, got the value of ${HOOK_URL}',
      '  secret-echo.yaml:4:14: sinks[0].timeout: expected a duration such as 500ms, 30s, 5m, 2h or 7d, got the value of ${HOOK_TIMEOUT}',
    ],
  ],
  [
    'sink-credentials.yaml',
    [
      'invalid config file sink-credentials.yaml: 5 problems:',
      '  sink-credentials.yaml:3:10: sinks[0].url: the URL holds credentials (user:password@), which are never sent; give them as username and password (or passwordFile)',
      '  sink-credentials.yaml:6:15: sinks[1].username: the credentials would cross the network unencrypted (an http:// URL): use https://, or allowPlaintextCredentials: true if the network is encrypted otherwise',
      '  sink-credentials.yaml:12:31: sinks[2].headers.Authorization: apiKey sets the Authorization header: give the credentials one way, not both',
      '  sink-credentials.yaml:14:15: sinks[3].endpoint: the URL holds credentials (user:password@), which are never sent; give an Authorization header in headers or headersFile',
      '  sink-credentials.yaml:16:10: sinks[4].url: the URL holds credentials (user:password@), which are never sent; give an Authorization header in headers',
    ],
  ],
  [
    'sinks-shape.yaml',
    [
      'invalid config file sinks-shape.yaml: 6 problems:',
      '  sinks-shape.yaml:2:11: sinks[0].type: expected one of stdout, webhook, slack, teams, discord, mattermost, google-chat, kafka, otlp, opensearch, elasticsearch, file, got "smtp"',
      '  sinks-shape.yaml:3:5: sinks[1]: missing key url',
      '  sinks-shape.yaml:5:5: sinks[2]: missing key type',
      '  sinks-shape.yaml:8:12: sinks[3].batch: expected a number from 1 to 10,000, got the number 0',
      '  sinks-shape.yaml:9:27: sinks[3].maxRequestsPerSecond: expected a number greater than 0, got the number 0',
      '  sinks-shape.yaml:11:13: sinks[4].format: expected one of json, pretty, got "yaml"',
    ],
  ],
  [
    'slack-targets.yaml',
    [
      'invalid config file slack-targets.yaml: 3 problems:',
      '  slack-targets.yaml:2:5: sinks[0]: a Slack sink posts either through webhookUrl or as a bot with token and channel, not both',
      '  slack-targets.yaml:5:5: sinks[1]: a Slack bot sink needs both token and channel (token is missing)',
      '  slack-targets.yaml:7:5: sinks[2]: a Slack sink needs webhookUrl (an incoming webhook), or token and channel (a bot)',
    ],
  ],
  [
    'tabs.yaml',
    ['invalid config file tabs.yaml:2:1: not valid YAML: tabs are not allowed for indentation; use spaces.'],
  ],
  [
    'two-stdout.yaml',
    [
      'invalid config file two-stdout.yaml:4:11: sinks[1].type: only one stdout sink can be listed (stdout is one stream).',
    ],
  ],
  [
    'typo-key.yaml',
    ['invalid config file typo-key.yaml:2:1: namespces: unknown key (did you mean namespaces?).'],
  ],
  [
    'wrong-types.yaml',
    [
      'invalid config file wrong-types.yaml: 6 problems:',
      '  wrong-types.yaml:1:13: namespaces: expected a list, got "shop"',
      '  wrong-types.yaml:2:10: initial: expected true or false, got "yes"',
      '  wrong-types.yaml:3:9: status: expected true or false, got the number 1',
      '  wrong-types.yaml:4:18: shutdownTimeout: expected a duration such as 500ms, 30s, 5m, 2h or 7d, got the number 10',
      '  wrong-types.yaml:5:9: preset: expected one of default, quiet, everything, got "loud"',
      '  wrong-types.yaml:6:9: output: expected one of json, pretty, none, got "yaml"',
    ],
  ],
];

describe('config loader: the broken-file corpus', () => {
  for (const [file, expected] of CORPUS) {
    it(file, () => {
      assert.deepEqual(problemsOf(file), expected);
    });
  }

  it('covers every file of the corpus (and the empty file is valid)', () => {
    const files = readdirSync(FIXTURES).filter((name) => name.endsWith('.yaml'));
    assert.deepEqual(
      files.filter((name) => !CORPUS.some(([file]) => file === name)),
      ['empty.yaml'],
    );
    assert.deepEqual(loadConfigFile(path.join(FIXTURES, 'empty.yaml'), {}).config, {});
  });

  it('never echoes a value that came from the environment', () => {
    for (const [file] of CORPUS) {
      for (const line of nonEmpty(problemsOf(file), `problems of ${file}`))
        assert.doesNotMatch(line, /s3cr3t/, file);
    }
  });

  it('never shows a password written in a sink URL or key', () => {
    assert.ok(!problemsOf('sink-credentials.yaml').join('\n').includes('hunter2'));
  });

  it('an unreadable file is one sentence, exit 2', () => {
    assert.throws(
      () => loadConfigFile(path.join(FIXTURES, 'no-such-file.yaml'), {}),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message ===
          `cannot read config file ${path.join(FIXTURES, 'no-such-file.yaml')}: no such file; check the path given to -c/--config.`,
    );
  });

  it('a header kubediff sets itself is refused in the file as with --webhook-header', () => {
    assert.throws(
      () =>
        parseConfig(
          'sinks:\n  - type: webhook\n    url: https://h/\n    headers:\n      X-Kubediff-Signature: forged\n',
          'c.yaml',
          {},
        ),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message ===
          'invalid config file c.yaml:5:29: sinks[0].headers.X-Kubediff-Signature: kubediff sets X-Kubediff-Signature itself.',
    );
  });

  it('values of the wrong type anywhere are problems of their shape, never a crash of a later check', () => {
    const text = [
      'events: ""',
      'sinks:',
      '  - null',
      '  - "webhook"',
      '  - type: slack',
      '    channel: 5',
      '    token: t',
      '  - type: webhook',
      '    url: https://h/',
      '    headers: "X-Token: a"',
      '    filter: "shop"',
      '  - type: stdout',
      '    filter: { events: "" }',
      '',
    ].join('\n');
    assert.throws(
      () => parseConfig(text, 'c.yaml', {}),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message ===
          [
            'invalid config file c.yaml: 7 problems:',
            '  c.yaml:1:9: events: expected a list, got ""',
            '  c.yaml:3:5: sinks[0]: expected a mapping, got nothing',
            '  c.yaml:4:5: sinks[1]: expected a mapping, got "webhook"',
            '  c.yaml:6:14: sinks[2].channel: expected a string, got the number 5',
            '  c.yaml:10:14: sinks[3].headers: expected a mapping, got a string',
            '  c.yaml:11:13: sinks[3].filter: expected a mapping, got "shop"',
            '  c.yaml:13:23: sinks[4].filter.events: expected a list, got ""',
          ].join('\n'),
    );
  });

  it('an unknown key far from every known one lists the keys', () => {
    assert.throws(
      () => parseConfig('colour: red\n', 'c.yaml', {}),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message ===
          'invalid config file c.yaml:1:1: colour: unknown key; expected one of kubeconfig, context, contexts, allContexts, clusters, clusterName, preset, namespaces, excludeNamespaces, resources, excludeResources, selector, events, initial, status, ignore, only, redact, ignoreManagers, output, shutdownTimeout, deadLetter, deadLetterMaxSize, deadLetterMaxFiles, state, usedBy, outcomes, stories, sinks, audit, admission, peers, ignoreUsers, fleet, ui.',
    );
  });
});

describe('config loader: ${VAR} substitution', () => {
  it('substitutes ${VAR} and ${VAR:-default}, and $$ is a literal $', () => {
    assert.deepEqual(substitute('a-${X}-${Y:-dflt}-$${Z}', { X: '1' }), {
      text: 'a-1-dflt-${Z}',
      names: ['X'],
      missing: [],
      whole: false,
    });
    // An empty variable takes the default, like the shell's :-.
    assert.equal(substitute('${E:-d}', { E: '' }).text, 'd');
    assert.deepEqual(substitute('${NOPE}', {}).missing, ['NOPE']);
  });

  it('turns a plain ${VAR} holding a number or boolean into one; quoted stays a string', () => {
    const loaded = parseConfig(
      'initial: ${INITIAL}\nclusterName: "${N}"\nsinks:\n  - type: webhook\n    url: https://h/\n    batch: ${BATCH}\n',
      'c.yaml',
      { INITIAL: 'true', N: '42', BATCH: '50' },
    );
    assert.equal(loaded.config.initial, true);
    assert.equal(loaded.config.clusterName, '42');
    assert.deepEqual(loaded.config.sinks?.[0], { type: 'webhook', url: 'https://h/', batch: 50 });
    assert.deepEqual(
      [...loaded.fromEnvironment],
      [
        ['initial', ['INITIAL']],
        ['clusterName', ['N']],
        ['sinks[0].batch', ['BATCH']],
      ],
    );
  });

  it('keys are never substituted', () => {
    assert.throws(() => parseConfig('${KEY}: 1\n', 'c.yaml', { KEY: 'initial' }), /unknown key/);
  });

  it('secrets reach the sink spec and not the messages', () => {
    const loaded = parseConfig(
      'sinks:\n  - type: webhook\n    url: ${URL}\n    secret: ${SECRET}\n    headers:\n      Authorization: Bearer ${TOKEN}\n',
      'c.yaml',
      { URL: 'https://hooks.example.com/abc', SECRET: 'hmac-key', TOKEN: 't0k' },
    );
    const settings = settingsFromConfig(loaded, {}, false, {});
    assert.deepEqual(settings.delivery.sinks, [
      {
        type: 'webhook',
        url: 'https://hooks.example.com/abc',
        headers: { Authorization: 'Bearer t0k' },
        secret: 'hmac-key',
      },
    ]);
  });
});

describe('config loader: log sinks', () => {
  it('an Authorization header in headersFile beside username and password is one problem at headersFile', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kubediff-headers-'));
    const headers = path.join(dir, 'headers');
    writeFileSync(headers, 'X-Team: sre\nAuthorization: Bearer t0k-s3cr3t\n');
    const loaded = parseConfig(
      `sinks:\n  - type: opensearch\n    url: https://search:9200\n    username: kd\n    password: pw-s3cr3t\n    headersFile: ${headers}\n`,
      'c.yaml',
      {},
    );
    assert.throws(
      () => settingsFromConfig(loaded, {}, false, {}),
      (error: unknown) =>
        error instanceof ConfigError &&
        exitCodeOf(error) === EXIT_USAGE &&
        error.message ===
          'invalid config file c.yaml:6:18: sinks[0].headersFile: sets the Authorization header, which username and password set: give the credentials one way, not both.',
    );
    rmSync(dir, { recursive: true, force: true });
  });

  it('batch, batchBytes (a size) and queueCapacity reach the Kafka, OTLP and search sinks', () => {
    const loaded = parseConfig(
      [
        'sinks:',
        '  - { type: kafka, brokers: ["k:9092"], topic: t, batch: 100, batchBytes: 512KB, queueCapacity: 50 }',
        '  - { type: otlp, endpoint: "http://c:4318", batchBytes: 2MB }',
        '  - { type: elasticsearch, url: "https://es:9200", batchBytes: "1.5mb" }',
      ].join('\n'),
      'c.yaml',
      {},
    );
    const sinks = settingsFromConfig(loaded, {}, false, {}).delivery.sinks as {
      batchMaxEvents?: number;
      batchMaxBytes?: number;
      queue?: object;
    }[];
    assert.deepEqual(
      sinks.map(({ batchMaxEvents, batchMaxBytes, queue }) => [batchMaxEvents, batchMaxBytes, queue]),
      [
        [100, 512 * 1024, { capacity: 50 }],
        [undefined, 2 * 1024 * 1024, undefined],
        [undefined, 1.5 * 1024 * 1024, undefined],
      ],
    );
  });
});

describe('presets', () => {
  it('default: the documented defaults', () => {
    assert.deepEqual(presetIgnoredPaths('default', undefined, []), [...DEFAULT_IGNORED_PATHS]);
  });

  it('quiet: the defaults plus annotations that repeat another change; no pods, replicasets, controllerrevisions', () => {
    assert.deepEqual(presetIgnoredPaths('quiet', undefined, []), [
      ...DEFAULT_IGNORED_PATHS,
      '/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration',
      '/metadata/annotations/deployment.kubernetes.io~1revision',
      '/metadata/annotations/deprecated.daemonset.template.generation',
      '/metadata/annotations/control-plane.alpha.kubernetes.io~1leader',
    ]);
    const settings = settingsFromConfig(parseConfig('preset: quiet\n', 'c.yaml', {}), {}, false, {});
    assert.deepEqual(
      settings.excludeResources.map((name) => name.text),
      ['pods', 'replicasets.apps', 'controllerrevisions.apps'],
    );
    // Naming one of them brings it back.
    const named = settingsFromConfig(
      parseConfig('preset: quiet\nresources: [po, deploy]\n', 'c.yaml', {}),
      {},
      false,
      {},
    );
    assert.deepEqual(
      named.excludeResources.map((name) => name.text),
      ['replicasets.apps', 'controllerrevisions.apps'],
    );
  });

  it('everything: nothing ignored, /status included; status: false takes /status out again', () => {
    assert.deepEqual(presetIgnoredPaths('everything', undefined, []), []);
    assert.deepEqual(presetIgnoredPaths('everything', false, []), ['/status']);
    assert.equal(PRESETS.everything.status, true);
  });

  it('--status and ignore: combine with a preset', () => {
    assert.deepEqual(presetIgnoredPaths('default', true, ['/spec/replicas']), [
      '/metadata/managedFields',
      '/metadata/resourceVersion',
      '/metadata/generation',
      '/spec/replicas',
    ]);
    // A path named again is listed once, and an explicit /status stays even with --status.
    assert.deepEqual(presetIgnoredPaths('default', true, ['/spec/replicas', '/status']), [
      '/metadata/managedFields',
      '/metadata/resourceVersion',
      '/metadata/generation',
      '/spec/replicas',
      '/status',
    ]);
    assert.deepEqual(presetIgnoredPaths('default', false, ['/status', '/metadata/uid']), [
      ...DEFAULT_IGNORED_PATHS,
      '/metadata/uid',
    ]);
  });

  it('an unknown --preset is a usage error', async () => {
    await assert.rejects(
      loadWatchSettings({ preset: 'loud' }, false, {}),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message === 'invalid --preset "loud": use default, quiet, everything.',
    );
  });
});

describe('flags over the file', () => {
  const FILE = `
kubeconfig: /from/file
context: file-context
clusterName: file-cluster
namespaces: [shop, "team-*"]
excludeNamespaces: [kube-system, "*-sandbox"]
resources: [deploy, cm]
selector: app=web
events: [updated]
initial: true
ignore:
  - /spec/replicas
  - path: /metadata/labels
    resources: [cm]
only: [/spec]
output: json
shutdownTimeout: 30s
sinks:
  - type: webhook
    url: https://hooks.example.com/a
    filter:
      events: [updated]
      resources: [deploy]
`;
  const loaded = () => parseConfig(FILE, 'c.yaml', {});

  it('the file alone', () => {
    const settings = settingsFromConfig(loaded(), {}, true, {});
    assert.equal(settings.kubeconfig, '/from/file');
    assert.deepEqual(settings.contexts, ['file-context']);
    assert.equal(settings.clusterName, 'file-cluster');
    // A glob among the namespaces: every namespace is watched and matched client-side.
    assert.deepEqual(settings.namespaces, []);
    assert.deepEqual(settings.excludeNamespaces, ['kube-system']);
    assert.deepEqual(settings.filter, {
      namespaces: ['shop', 'team-*'],
      excludeNamespaces: ['*-sandbox'],
      ignore: [{ path: '/metadata/labels', resources: ['cm'] }],
      only: ['/spec'],
    });
    assert.deepEqual(
      settings.resources.map((name) => name.text),
      ['deploy', 'cm'],
    );
    assert.equal(settings.labelSelector, 'app=web');
    assert.deepEqual([...settings.events], ['UPDATED']);
    assert.equal(settings.initial, true);
    assert.ok(settings.ignoredPaths.includes('/spec/replicas'));
    assert.equal(settings.output, 'json');
    assert.equal(settings.delivery.shutdownTimeoutMs, 30_000);
    assert.deepEqual(settings.delivery.sinks, [
      {
        type: 'webhook',
        url: 'https://hooks.example.com/a',
        filter: { resources: ['deploy'], types: ['UPDATED'] },
      },
    ]);
  });

  it('every flag wins over its key; --ignore and --webhook add to the file', () => {
    const settings = settingsFromConfig(
      loaded(),
      {
        kubeconfig: '/from/flag',
        context: 'flag-context',
        clusterName: 'flag-cluster',
        namespace: ['web'],
        excludeNamespace: ['other'],
        resource: ['pods'],
        selector: 'tier=db',
        events: 'added,deleted',
        initial: false,
        ignore: ['/metadata/annotations'],
        output: 'pretty',
        shutdownTimeout: '1s',
        webhook: ['https://flag.example.com/b'],
      },
      false,
      {},
    );
    assert.equal(settings.kubeconfig, '/from/flag');
    assert.deepEqual(settings.contexts, ['flag-context']);
    assert.equal(settings.clusterName, 'flag-cluster');
    assert.deepEqual(settings.namespaces, ['web']);
    assert.deepEqual(settings.excludeNamespaces, ['other']);
    assert.deepEqual(
      settings.resources.map((name) => name.text),
      ['pods'],
    );
    assert.equal(settings.labelSelector, 'tier=db');
    assert.deepEqual([...settings.events].sort(), ['ADDED', 'DELETED']);
    assert.equal(settings.initial, false);
    assert.ok(settings.ignoredPaths.includes('/spec/replicas'));
    assert.ok(settings.ignoredPaths.includes('/metadata/annotations'));
    assert.equal(settings.output, 'pretty');
    assert.equal(settings.delivery.shutdownTimeoutMs, 1_000);
    assert.deepEqual(
      settings.delivery.sinks.map((sink) => (sink.type === 'webhook' ? sink.url : sink.type)),
      ['https://hooks.example.com/a', 'https://flag.example.com/b'],
    );
    // The file's per-resource and only rules stay (no flag states them).
    assert.deepEqual(settings.filter, {
      ignore: [{ path: '/metadata/labels', resources: ['cm'] }],
      only: ['/spec'],
    });
  });

  it('a stdout sink in the file replaces the implicit stdout; -o sets its format', () => {
    const file = parseConfig(
      'sinks:\n  - type: stdout\n    color: false\n    filter:\n      events: [deleted]\n',
      'c.yaml',
      {},
    );
    const settings = settingsFromConfig(file, { output: 'json' }, true, {});
    assert.equal(settings.output, 'none');
    assert.deepEqual(settings.delivery.sinks, [
      { type: 'stdout', format: 'json', color: false, filter: { types: ['DELETED'] } },
    ]);
  });

  it('output: none needs a sink; deadLetter needs an HTTP sink', () => {
    assert.throws(
      () => settingsFromConfig(parseConfig('output: none\n', 'c.yaml', {}), {}, false, {}),
      /c\.yaml: output none leaves events nowhere to go/,
    );
    assert.throws(
      () => settingsFromConfig(parseConfig('deadLetter: /tmp/x.jsonl\n', 'c.yaml', {}), {}, false, {}),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message ===
          'invalid config file c.yaml:1:13: deadLetter: applies to the sinks that deliver (every type but stdout), and none is listed (stdout has no dead letters).',
    );
    const ok = settingsFromConfig(
      parseConfig(
        'output: none\ndeadLetter: /tmp/x.jsonl\nsinks:\n  - type: webhook\n    url: https://h/\n',
        'c.yaml',
        {},
      ),
      {},
      false,
      {},
    );
    assert.deepEqual(ok.delivery.sinks, [
      { type: 'webhook', url: 'https://h/', deadLetterFile: '/tmp/x.jsonl' },
    ]);
  });

  it('the dead-letter cap: from the file or the flags, checked, and only with a dead-letter file', async () => {
    const sinks = 'sinks:\n  - type: webhook\n    url: https://h/\n    deadLetter: /tmp/own.jsonl\n';
    const fromFile = settingsFromConfig(
      parseConfig(`deadLetterMaxSize: 2MB\ndeadLetterMaxFiles: 5\n${sinks}`, 'c.yaml', {}),
      {},
      false,
      {},
    );
    assert.deepEqual(fromFile.delivery.deadLetterLimits, { maxFileBytes: 2 * 1024 * 1024, maxFiles: 5 });
    const flagsWin = settingsFromConfig(
      parseConfig(`deadLetterMaxSize: 2MB\n${sinks}`, 'c.yaml', {}),
      { deadLetterMaxFiles: '7' },
      false,
      {},
    );
    assert.deepEqual(flagsWin.delivery.deadLetterLimits, { maxFileBytes: 2 * 1024 * 1024, maxFiles: 7 });
    const defaults = settingsFromConfig(parseConfig(sinks, 'c.yaml', {}), {}, false, {});
    assert.deepEqual(defaults.delivery.deadLetterLimits, { maxFileBytes: 10 * 1024 * 1024, maxFiles: 3 });
    // Flags alone.
    const webhook = { webhook: ['https://h/'] };
    assert.deepEqual(
      (
        await loadWatchSettings(
          { ...webhook, deadLetter: '/tmp/x.jsonl', deadLetterMaxSize: '500k' },
          false,
          {},
        )
      ).delivery.deadLetterLimits,
      { maxFileBytes: 500 * 1024, maxFiles: 3 },
    );
    await assert.rejects(
      loadWatchSettings({ ...webhook, deadLetterMaxSize: '500k' }, false, {}),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message ===
          '--dead-letter-max-size and --dead-letter-max-files apply to --dead-letter, and it is not given.',
    );
    await assert.rejects(
      loadWatchSettings({ ...webhook, deadLetter: '/tmp/x.jsonl', deadLetterMaxSize: 'big' }, false, {}),
      /^UsageError: invalid --dead-letter-max-size "big": use a size such as 64MB or 1GB\.$/,
    );
    assert.throws(
      () => parseConfig(`deadLetterMaxSize: lots\ndeadLetterMaxFiles: 0\n${sinks}`, 'c.yaml', {}),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message ===
          [
            'invalid config file c.yaml: 2 problems:',
            '  c.yaml:1:20: deadLetterMaxSize: expected a size such as 64MB or 1GB, got "lots"',
            '  c.yaml:2:21: deadLetterMaxFiles: expected a number from 1 to 1,000, got the number 0',
          ].join('\n'),
    );
    assert.throws(
      () =>
        settingsFromConfig(
          parseConfig(
            'deadLetterMaxFiles: 2\nsinks:\n  - type: webhook\n    url: https://h/\n',
            'c.yaml',
            {},
          ),
          {},
          false,
          {},
        ),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message ===
          'invalid config file c.yaml:1:21: deadLetterMaxFiles: applies to dead-letter files, and none is set (deadLetter).',
    );
  });
});

describe('the ui: block (docs/ui.md)', () => {
  it('listen and tokenFile reach the settings; the --ui flags win over them in the CLI', () => {
    const loaded = parseConfig(
      'ui:\n  listen: 127.0.0.1:8081\n  tokenFile: /etc/kubediff/ui-token\n',
      'c.yaml',
      {},
    );
    assert.deepEqual(settingsFromConfig(loaded, {}, true, {}).ui, {
      listen: '127.0.0.1:8081',
      tokenFile: '/etc/kubediff/ui-token',
    });
  });

  it('an unknown key is named with its line', () => {
    assert.throws(
      () => parseConfig('ui:\n  listen: 127.0.0.1:8081\n  token: abc\n', 'c.yaml', {}),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message ===
          'invalid config file c.yaml:3:3: ui.token: unknown key; expected one of listen, tokenFile.',
    );
  });

  it('checks ui.listen when the file is read, not when the page starts (kubediff validate finds it)', () => {
    assert.throws(
      () => parseConfig('ui:\n  listen: "not an address"\n', 'c.yaml', {}),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message ===
          'invalid config file c.yaml:2:11: ui.listen: expected [host]:port such as :8443, got "not an address".',
    );
    assert.equal(
      parseConfig('ui:\n  listen: 127.0.0.1:8080\n', 'c.yaml', {}).config.ui?.listen,
      '127.0.0.1:8080',
    );
  });
});
