// The batch sinks' names, for logs, metrics and the start-up line, when the config gives none:
// 'otlp http://collector:4318/', 'opensearch https://search:9200/…' (paths elided: they may hold
// credentials), 'kafka <topic>'. The one place they are made: the sinks take theirs from setup.ts.
import { redactUrl } from '../util/url.ts';

export type BatchSinkTarget =
  | { type: 'otlp'; endpoint: string }
  | { type: 'opensearch' | 'elasticsearch'; url: string }
  | { type: 'kafka'; topic: string };

export function batchSinkName(target: BatchSinkTarget): string {
  if (target.type === 'kafka') return `kafka ${target.topic}`;
  return target.type === 'otlp'
    ? `otlp ${redactUrl(target.endpoint)}`
    : `${target.type} ${redactUrl(target.url)}`;
}
