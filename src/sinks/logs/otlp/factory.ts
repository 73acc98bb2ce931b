// The OTLP sink type as src/sinks/registry.ts lists it (src/sinks/component.ts): its settings from
// config.ts, and a factory that imports the OpenTelemetry packages (otlp.ts) only when an OTLP sink is made.

import { redactUrl } from '../../../util/url.ts';
import type { SinkComponent } from '../../component.ts';
import { logSinkOptions } from '../../core/sink-options.ts';
import {
  type OtlpEntry,
  type OtlpSinkSpec,
  otlpCredentials,
  otlpEndpointFormat,
  otlpFlags,
  otlpSchema,
  otlpSpecOf,
  otlpSpecsFromFlags,
} from './config.ts';

export const otlpComponent: SinkComponent<OtlpEntry, OtlpSinkSpec> = {
  types: ['otlp'],
  schemas: { otlp: otlpSchema },
  formats: [otlpEndpointFormat],
  flags: otlpFlags,
  fromFlags: otlpSpecsFromFlags,
  spec: otlpSpecOf,
  name: (spec) => `otlp ${redactUrl(spec.endpoint)}`,
  credentials: otlpCredentials,
  async create(spec, context) {
    const { OtlpSink } = await import('./otlp.ts');
    return OtlpSink.create({
      ...logSinkOptions(spec, this.name(spec), context),
      endpoint: spec.endpoint,
      ...(spec.protocol ? { protocol: spec.protocol } : {}),
    });
  },
  docs: 'docs/sinks.md#opentelemetry-otlp-logs',
};
