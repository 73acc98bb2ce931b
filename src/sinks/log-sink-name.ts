// The log sinks' default names, for logs and the start-up line: 'otlp http://collector:4318/…',
// 'opensearch https://search:9200/…' (paths elided: they may hold credentials).
import { redactUrl } from '../util/url.ts';

export function describeLogSink(
  spec: { type: 'otlp'; endpoint: string } | { type: 'opensearch' | 'elasticsearch'; url: string },
): string {
  return spec.type === 'otlp' ? `otlp ${redactUrl(spec.endpoint)}` : `${spec.type} ${redactUrl(spec.url)}`;
}
