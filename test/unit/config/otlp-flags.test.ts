// --otlp-endpoint: an OTLP sink, its headers from OpenTelemetry's own variables (never a flag), and
// mistakes as one sentence with exit code 2 that never echo a header's value.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sinkSettingsFromFlags } from '../../../src/config/sink-settings.ts';
import { UsageError } from '../../../src/util/errors.ts';

describe('--otlp-endpoint', () => {
  it('adds an OTLP sink with the headers of OTEL_EXPORTER_OTLP_HEADERS and _LOGS_HEADERS (URL-decoded)', () => {
    const { sinks } = sinkSettingsFromFlags(
      { otlpEndpoint: 'http://collector:4318' },
      {
        OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20abc,x-team=sre',
        OTEL_EXPORTER_OTLP_LOGS_HEADERS: 'x-team=logs',
      },
    );
    assert.deepEqual(sinks, [
      {
        type: 'otlp',
        endpoint: 'http://collector:4318',
        headers: { authorization: 'Bearer abc', 'x-team': 'logs' },
      },
    ]);
  });

  it('refuses a URL that is not http(s) or holds credentials, and a header pair without =, never echoing its value', () => {
    assert.throws(
      () => sinkSettingsFromFlags({ otlpEndpoint: 'collector:4317' }, {}),
      (error: unknown) => error instanceof UsageError && /invalid --otlp-endpoint/.test(error.message),
    );
    assert.throws(
      () => sinkSettingsFromFlags({ otlpEndpoint: 'https://tenant:s3cr3t@otlp.example' }, {}),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message ===
          'invalid --otlp-endpoint: the URL holds credentials (user:password@), which are never sent; give an Authorization header in OTEL_EXPORTER_OTLP_HEADERS.',
    );
    assert.throws(
      () =>
        sinkSettingsFromFlags(
          { otlpEndpoint: 'http://c:4318' },
          { OTEL_EXPORTER_OTLP_HEADERS: 'token-s3cr3t' },
        ),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message === 'invalid OTEL_EXPORTER_OTLP_HEADERS (pair 1): use key=value,key=value.' &&
        !error.message.includes('s3cr3t'),
    );
  });
});
