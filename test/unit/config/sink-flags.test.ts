// The sink flags and environment variables of `kubediff watch`.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { EXIT_USAGE, exitCodeOf } from '../../../src/cli/exit-codes.ts';
import { watchSettingsFromFlags } from '../../../src/config/settings.ts';
import { describeSinkSpec, sinkSettingsFromFlags } from '../../../src/config/sink-settings.ts';
import type { SinkSpec } from '../../../src/sinks/core/setup.ts';
import { defaultSinkName } from '../../../src/sinks/core/sink-name.ts';
import { UsageError } from '../../../src/util/errors.ts';
import { redactUrl, scrubUrl } from '../../../src/util/url.ts';

describe('sink flags', () => {
  it('sets up one webhook sink per --webhook, with headers, batch, timeout and the secret from the environment', () => {
    const settings = sinkSettingsFromFlags(
      {
        webhook: ['https://a.example/hook', 'http://127.0.0.1:9000/x'],
        webhookHeader: ['X-Team: sre'],
        webhookBatch: '50',
        webhookTimeout: '3s',
        deadLetter: '/tmp/dead.jsonl',
        shutdownTimeout: '30s',
      },
      {
        KUBEDIFF_WEBHOOK_SECRET: 'hmac',
        KUBEDIFF_WEBHOOK_HEADERS: 'Authorization: Bearer abc\nX-Extra: 1',
      },
    );
    assert.deepEqual(settings, {
      sinks: [
        {
          type: 'webhook',
          url: 'https://a.example/hook',
          headers: { authorization: 'Bearer abc', 'x-extra': '1', 'x-team': 'sre' },
          secret: 'hmac',
          batch: { maxEvents: 50 },
          timeoutMs: 3000,
        },
        {
          type: 'webhook',
          url: 'http://127.0.0.1:9000/x',
          headers: { authorization: 'Bearer abc', 'x-extra': '1', 'x-team': 'sre' },
          secret: 'hmac',
          batch: { maxEvents: 50 },
          timeoutMs: 3000,
        },
      ],
      deadLetterFile: '/tmp/dead.jsonl',
      shutdownTimeoutMs: 30_000,
    });
  });

  it('sets up Slack by webhook (flag or environment) and as a bot (channel flag, token from the environment)', () => {
    const settings = sinkSettingsFromFlags(
      { slackChannel: '#alerts' },
      {
        KUBEDIFF_SLACK_WEBHOOK: 'https://hooks.slack.com/services/T/B/X',
        KUBEDIFF_SLACK_TOKEN: 'xoxb-1',
        KUBEDIFF_SLACK_API_URL: 'http://127.0.0.1:1/api',
      },
    );
    assert.deepEqual(settings.sinks, [
      { type: 'slack', webhookUrl: 'https://hooks.slack.com/services/T/B/X' },
      { type: 'slack', token: 'xoxb-1', channel: '#alerts', apiUrl: 'http://127.0.0.1:1/api' },
    ]);
    assert.equal(settings.shutdownTimeoutMs, 10_000);
    const flagWins = sinkSettingsFromFlags(
      { slackWebhook: 'https://hooks.slack.com/services/flag' },
      { KUBEDIFF_SLACK_WEBHOOK: 'https://hooks.slack.com/services/env' },
    );
    assert.deepEqual(flagWins.sinks, [
      { type: 'slack', webhookUrl: 'https://hooks.slack.com/services/flag' },
    ]);
  });

  it('sets up Teams, Discord, Mattermost and Google Chat from flags or the environment, the flag winning', () => {
    const settings = sinkSettingsFromFlags(
      {
        teamsWebhook: 'https://prod.workflows.example/hook',
        discordWebhook: 'https://discord.example/api/webhooks/1/x',
      },
      {
        KUBEDIFF_TEAMS_WEBHOOK: 'https://env.example/ignored',
        KUBEDIFF_MATTERMOST_WEBHOOK: 'https://mm.example/hooks/abc',
        KUBEDIFF_GOOGLE_CHAT_WEBHOOK: 'https://chat.example/v1/spaces/AAA/messages?key=k',
      },
    );
    assert.deepEqual(settings.sinks, [
      { type: 'teams', webhookUrl: 'https://prod.workflows.example/hook' },
      { type: 'discord', webhookUrl: 'https://discord.example/api/webhooks/1/x' },
      { type: 'mattermost', webhookUrl: 'https://mm.example/hooks/abc' },
      { type: 'google-chat', webhookUrl: 'https://chat.example/v1/spaces/AAA/messages?key=k' },
    ]);
  });

  it('sets up a Kafka sink from --kafka-brokers and --kafka-topic, SASL from the environment only', () => {
    const settings = sinkSettingsFromFlags(
      { kafkaBrokers: 'kafka-0:9092, [::1]:9093', kafkaTopic: 'changes', kafkaTls: true },
      {
        KUBEDIFF_KAFKA_USERNAME: 'kd',
        KUBEDIFF_KAFKA_PASSWORD: 'pw',
        KUBEDIFF_KAFKA_SASL_MECHANISM: 'PLAIN',
      },
    );
    assert.deepEqual(settings.sinks, [
      {
        type: 'kafka',
        brokers: ['kafka-0:9092', '[::1]:9093'],
        topic: 'changes',
        tls: {},
        sasl: { mechanism: 'PLAIN', username: 'kd', password: 'pw' },
      },
    ]);
    // Over plaintext only when asked for (a network encrypted otherwise).
    const scram = sinkSettingsFromFlags(
      { kafkaBrokers: 'k:9092', kafkaTopic: 't', kafkaAllowPlaintextCredentials: true },
      { KUBEDIFF_KAFKA_USERNAME: 'kd', KUBEDIFF_KAFKA_PASSWORD: 'pw' },
    );
    assert.equal(scram.sinks[0]?.type === 'kafka' && scram.sinks[0].sasl?.mechanism, 'SCRAM-SHA-512');
    assert.equal(scram.sinks[0]?.type === 'kafka' && scram.sinks[0].tls, undefined);
  });

  it('--kafka-ca-file: TLS with that CA; credentials never over plaintext unless allowed', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kubediff-kafka-ca-'));
    const ca = path.join(dir, 'ca.pem');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    const settings = sinkSettingsFromFlags({ kafkaBrokers: 'k:9093', kafkaTopic: 't', kafkaCaFile: ca }, {});
    assert.deepEqual(settings.sinks[0]?.type === 'kafka' && settings.sinks[0].tls, {
      ca: readFileSync(ca, 'utf8'),
    });
    const credentials = { KUBEDIFF_KAFKA_USERNAME: 'kd', KUBEDIFF_KAFKA_PASSWORD: 'secret-pw' };
    for (const [flags, env, message] of [
      [
        { kafkaBrokers: 'k:9092', kafkaTopic: 't' },
        { ...credentials, KUBEDIFF_KAFKA_SASL_MECHANISM: 'PLAIN' },
        "the Kafka credentials of KUBEDIFF_KAFKA_USERNAME and KUBEDIFF_KAFKA_PASSWORD would cross the network unencrypted (SASL PLAIN over plaintext): add --kafka-tls or --kafka-ca-file <file> for the brokers' TLS listener, or --kafka-allow-plaintext-credentials if the network is encrypted otherwise.",
      ],
      [
        { kafkaBrokers: 'k:9092', kafkaTopic: 't', kafkaAllowPlaintextCredentials: true },
        {},
        '--kafka-allow-plaintext-credentials applies to SASL credentials, and none are given (KUBEDIFF_KAFKA_USERNAME, KUBEDIFF_KAFKA_PASSWORD).',
      ],
      [
        { kafkaBrokers: 'k:9092', kafkaTopic: 't', kafkaCaFile: path.join(dir, 'missing.pem') },
        {},
        `cannot read --kafka-ca-file ${path.join(dir, 'missing.pem')}: no such file; fix the path or the file's permissions.`,
      ],
    ] as const) {
      assert.throws(
        () => sinkSettingsFromFlags(flags, env),
        (error) =>
          error instanceof UsageError &&
          exitCodeOf(error) === EXIT_USAGE &&
          error.message === message &&
          !error.message.includes('secret-pw'),
      );
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('rejects mistakes with one sentence, exit code 2, and never the secret part of a URL', () => {
    const cases: [Parameters<typeof sinkSettingsFromFlags>[0], Record<string, string>, RegExp][] = [
      [
        { webhook: ['ftp://host/secret-path'] },
        {},
        /^invalid --webhook: expected an http:\/\/ or https:\/\/ URL, not ftp:\/\/\.$/,
      ],
      [
        { webhook: ['not a url/secret-path'] },
        {},
        /^invalid --webhook: expected an http:\/\/ or https:\/\/ URL, got "not a url\/…"\.$/,
      ],
      [
        { webhook: ['https://hook:secret-path@hooks.example/x'] },
        {},
        /^invalid --webhook: the URL holds credentials \(user:password@\), which are never sent; give an Authorization header in KUBEDIFF_WEBHOOK_HEADERS\.$/,
      ],
      [
        { slackWebhook: 'hooks.slack.com/services/T/B/SECRET' },
        {},
        /^invalid --slack-webhook: expected an http:\/\/ or https:\/\/ URL, got "hooks\.slack\.com\/…"\.$/,
      ],
      [{ slackChannel: '#alerts' }, {}, /--slack-channel needs a bot token: set KUBEDIFF_SLACK_TOKEN/],
      [{}, { KUBEDIFF_SLACK_TOKEN: 'xoxb-1' }, /KUBEDIFF_SLACK_TOKEN is set but --slack-channel is not/],
      [{ webhookBatch: '10' }, {}, /--webhook-batch applies to --webhook, and no --webhook is given/],
      [{ webhook: ['http://h/'], webhookBatch: '0' }, {}, /invalid --webhook-batch "0"/],
      [
        { webhook: ['http://h/'], webhookTimeout: '10' },
        {},
        /invalid --webhook-timeout "10": expected a duration/,
      ],
      [{ shutdownTimeout: 'soon' }, {}, /invalid --shutdown-timeout "soon"/],
      [
        { deadLetter: '/tmp/x' },
        {},
        /^--dead-letter applies to the deliveries of the sink flags \(--webhook, --slack-webhook, --teams-webhook, --discord-webhook, --mattermost-webhook, --google-chat-webhook, --kafka-brokers, --otlp-endpoint, --output-file\), and none is given \(stdout has no dead letters\)\.$/,
      ],
      [{ kafkaTopic: 't' }, {}, /--kafka-topic needs --kafka-brokers/],
      [{ kafkaBrokers: 'k:9092' }, {}, /--kafka-brokers needs --kafka-topic/],
      [{ kafkaBrokers: 'k', kafkaTopic: 't' }, {}, /invalid --kafka-brokers "k": expected host:port/],
      [
        { kafkaBrokers: 'k:9092', kafkaTopic: 't' },
        { KUBEDIFF_KAFKA_PASSWORD: 'secret-pw' },
        /SASL needs both KUBEDIFF_KAFKA_USERNAME and KUBEDIFF_KAFKA_PASSWORD; KUBEDIFF_KAFKA_USERNAME is not set/,
      ],
      [
        { kafkaBrokers: 'k:9092', kafkaTopic: 't' },
        {
          KUBEDIFF_KAFKA_USERNAME: 'u',
          KUBEDIFF_KAFKA_PASSWORD: 'p',
          KUBEDIFF_KAFKA_SASL_MECHANISM: 'GSSAPI',
        },
        /invalid KUBEDIFF_KAFKA_SASL_MECHANISM "GSSAPI": use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512/,
      ],
      [
        { teamsWebhook: 'prod.workflows.example/secret-path' },
        {},
        /^invalid --teams-webhook: expected an http:\/\/ or https:\/\/ URL, got "prod\.workflows\.example\/…"\.$/,
      ],
      [
        {},
        { KUBEDIFF_DISCORD_WEBHOOK: 'ftp://d/secret' },
        /^invalid KUBEDIFF_DISCORD_WEBHOOK: expected an http:\/\/ or https:\/\/ URL, not ftp:\/\/\.$/,
      ],
      [
        { webhook: ['http://h/'], webhookHeader: ['NoColon'] },
        {},
        /invalid --webhook-header "NoColon": use Name: value/,
      ],
      [
        { webhook: ['http://h/'], webhookHeader: ['Content-Type: text/plain'] },
        {},
        /kubediff sets Content-Type itself/,
      ],
      [
        { webhook: ['http://h/'], webhookHeader: ['X-Kubediff-Story-Id: mine'] },
        {},
        /kubediff sets X-Kubediff-Story-Id itself/,
      ],
    ];
    for (const [flags, env, expected] of cases) {
      assert.throws(
        () => sinkSettingsFromFlags(flags, env),
        (error: unknown) => {
          assert.ok(error instanceof UsageError, String(error));
          assert.match(error.message, expected);
          assert.ok(!/SECRET|secret-path/.test(error.message), error.message);
          return true;
        },
      );
    }
  });

  it('reaches WatchSettings: -o none, and no environment read without one (kubediff resources)', () => {
    const settings = watchSettingsFromFlags({ output: 'none', webhook: ['http://h/'] }, false, {
      KUBEDIFF_WEBHOOK_SECRET: 's',
    });
    assert.equal(settings.output, 'none');
    assert.equal(settings.delivery.sinks.length, 1);
    const resources = watchSettingsFromFlags({}, false);
    assert.deepEqual(resources.delivery.sinks, []);
    assert.throws(
      () => watchSettingsFromFlags({ output: 'none' }, false, {}),
      /--output none leaves events nowhere to go: add a sink flag \(--webhook, --slack-webhook, --teams-webhook, --discord-webhook, --mattermost-webhook, --google-chat-webhook, --kafka-brokers, --otlp-endpoint, --output-file\)\.$/,
    );
  });
});

describe('the start-up line names each sink as its logs and metrics do', () => {
  it('one name per sink type, URL paths elided; a Slack channel with its #', () => {
    const specs: SinkSpec[] = [
      { type: 'stdout', format: 'json' },
      { type: 'webhook', url: 'https://hooks.example.com/secret/path' },
      { type: 'slack', webhookUrl: 'https://hooks.slack.com/services/T0/B0/XYZ' },
      { type: 'slack', token: 'xoxb-1', channel: 'alerts' },
      { type: 'slack', token: 'xoxb-1', channel: 'C0123456789' },
      { type: 'teams', webhookUrl: 'https://example.webhook.office.com/webhookb2/x' },
      { type: 'kafka', brokers: ['127.0.0.1:9092'], topic: 'changes' },
      { type: 'otlp', endpoint: 'https://otlp.example.com/v1/logs' },
      { type: 'opensearch', url: 'https://search.example.com:9200/' },
    ];
    assert.deepEqual(
      specs.map((spec) => describeSinkSpec(spec)),
      [
        'stdout',
        'webhook https://hooks.example.com/…',
        'slack https://hooks.slack.com/…',
        'slack #alerts',
        'slack C0123456789',
        'teams https://example.webhook.office.com/…',
        'kafka changes',
        'otlp https://otlp.example.com/…',
        'opensearch https://search.example.com:9200/',
      ],
    );
    assert.deepEqual(
      specs.map((spec) => describeSinkSpec(spec)),
      specs.map((spec) => defaultSinkName(spec)),
    );
    assert.equal(describeSinkSpec({ type: 'slack', token: 'xoxb-1', channel: 'alerts', name: 'ops' }), 'ops');
  });
});

describe('URLs in logs', () => {
  it('shows scheme and host only', () => {
    assert.equal(redactUrl('https://hooks.slack.com/services/T0/B0/abc'), 'https://hooks.slack.com/…');
    assert.equal(redactUrl('http://user:pw@127.0.0.1:8080/hook?token=x'), 'http://127.0.0.1:8080/…');
    assert.equal(redactUrl('https://example.com/'), 'https://example.com/');
    assert.equal(redactUrl('nonsense'), '(an invalid URL)');
    const url = new URL('https://hooks.slack.com/services/T0/B0/abc');
    assert.equal(
      scrubUrl(`request to ${url.href} failed at /services/T0/B0/abc`, url),
      'request to https://hooks.slack.com/… failed at /…',
    );
  });
});
