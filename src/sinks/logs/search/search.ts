// Indexes every event in OpenSearch or Elasticsearch through _bulk (docs/sinks.md): the event as `-o json`
// prints it plus `@timestamp`, its _id the event's id, so a retry never makes a second document (daily
// indices by the event's time: `index`; a data stream: `create`, whose 409 counts as delivered). Installs
// its index template (template.ts) before the first documents unless told not to (template-install.ts).
// Delivered by batch-sink.ts; each item is judged alone: 429 and 5xx retried, other refusals dead-lettered.
import type { KubediffEvent } from '../../../events/event.ts';
import { errorMessage } from '../../../util/errors.ts';
import { isoTimestamp } from '../../../util/timestamp.ts';
import {
  BatchSink,
  type BatchSinkOptions,
  type BatchWork,
  failedTransmission,
  type ItemFailure,
  type Transmission,
} from '../../core/batch-sink.ts';
import { bodyExcerpt, createAgent, type HttpTls, type PostOutcome, post } from '../../core/http.ts';
import { indexTemplate, type SearchIndexMode, templateName } from './template.ts';
import { TemplateInstall } from './template-install.ts';

export type SearchFlavor = 'opensearch' | 'elasticsearch';

/** Basic authentication, or an Elasticsearch API key (the base64 `id:key` it hands out). */
export type SearchAuth = { username: string; password: string } | { apiKey: string };

/** Beside the cluster's: BatchSinkOptions (batches of 5 MiB by default). */
export interface SearchSinkOptions extends BatchSinkOptions {
  flavor: SearchFlavor;
  /** The cluster's base URL (https://search.example:9200). */
  url: string;
  /** Data stream name, or the prefix of the daily indices. Default 'kubediff'. */
  index?: string;
  /** Default daily. */
  mode?: SearchIndexMode;
  /** Install the index template before the first batch. Default true. */
  installTemplate?: boolean;
  auth?: SearchAuth;
  headers?: Readonly<Record<string, string>>;
  tls?: HttpTls;
  /** Per request. Default 30 s (a bulk request of 500 documents on a busy cluster). */
  timeoutMs?: number | undefined;
  userAgent?: string;
}

const SEARCH_DEFAULTS = {
  index: 'kubediff',
  timeoutMs: 30_000,
  userAgent: 'kubediff',
  // Both take 100 MB per request by default (http.max_content_length); their guides advise bulk requests
  // of a few MiB, and hosted clusters (Amazon OpenSearch Service: 10 MiB on small instances) take less.
  batchMaxBytes: 5 * 1024 * 1024,
};
/** A bulk answer lists every item: status and error only (filter_path), up to this much. */
const MAX_BULK_ANSWER = 16 * 1024 * 1024;
const BULK_FIELDS = 'errors,items.*.status,items.*.error.type,items.*.error.reason';

type BulkItem = { status?: number; error?: { type?: string; reason?: string } };

export class SearchSink extends BatchSink {
  private readonly base: URL;
  private readonly index: string;
  private readonly mode: SearchIndexMode;
  private readonly agent;
  private readonly headers: Record<string, string>;
  private readonly template: TemplateInstall;

  constructor(options: SearchSinkOptions) {
    const base = new URL(options.url);
    super(options, {
      timeoutMs: SEARCH_DEFAULTS.timeoutMs,
      batchMaxBytes: SEARCH_DEFAULTS.batchMaxBytes,
    });
    this.base = base;
    this.index = options.index ?? SEARCH_DEFAULTS.index;
    this.mode = options.mode ?? 'daily';
    this.template = new TemplateInstall({
      name: templateName(this.index),
      put: () => this.putTemplate(),
      trouble: this.trouble,
      maxAttempts: this.retry.maxAttempts,
      wanted: options.installTemplate !== false,
    });
    this.agent = createAgent(this.timeoutMs, process.env, options.tls);
    this.headers = {
      'user-agent': options.userAgent ?? SEARCH_DEFAULTS.userAgent,
      ...options.headers,
      ...authorization(options.auth),
    };
  }

  protected release(): Promise<void> {
    return this.agent.destroy();
  }

  protected async transmit(work: BatchWork): Promise<Transmission> {
    if (this.template.pending) {
      const failure = await this.template.install();
      if (failure) return failure;
    }
    const url = new URL(this.base);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/_bulk`;
    url.search = `filter_path=${BULK_FIELDS}`;
    const outcome = await post(this.agent, url, this.bulkBody(work), {
      headers: { ...this.headers, 'content-type': 'application/x-ndjson' },
      timeoutMs: this.timeoutMs,
      signal: this.clock.deadlineSignal,
      maxResponseBytes: MAX_BULK_ANSWER,
      credentials: this.credentials,
    });
    this.template.bulkAnswered(outcome);
    if (!outcome.ok) return failedTransmission(outcome);
    let items: BulkItem[];
    try {
      const answer = JSON.parse(outcome.body) as { errors?: boolean; items?: Record<string, BulkItem>[] };
      if (!answer.errors) return { ok: true };
      items = (answer.items ?? []).map((item) => Object.values(item)[0] ?? {});
    } catch (error) {
      // Cut short or not JSON: nothing says which documents were taken, so all are sent again (same _ids).
      return {
        ok: false,
        retryable: true,
        aborted: false,
        reason: `an unreadable bulk answer (${errorMessage(error)})`,
        key: 'unreadable bulk answer',
      };
    }
    const expected = work.kind === 'events' ? work.events.length : 1;
    if (items.length !== expected)
      return {
        ok: false,
        retryable: true,
        aborted: false,
        reason: `a bulk answer of ${items.length} items for ${expected}`,
        key: 'bulk answer of the wrong length',
      };
    const itemFailures: ItemFailure[] = [];
    items.forEach((item, index) => {
      const failure = this.itemFailure(item, index);
      if (failure) itemFailures.push(failure);
    });
    return { ok: true, itemFailures };
  }

  /** undefined when the item was indexed (or, in a data stream, was there already). */
  private itemFailure(item: BulkItem, index: number): ItemFailure | undefined {
    const status = item.status ?? 0;
    if (status >= 200 && status < 300) return undefined;
    if (status === 409 && this.mode === 'data-stream') return undefined;
    const type = item.error?.type ?? 'error';
    const reason = `HTTP ${status} ${type}${item.error?.reason ? `: ${bodyExcerpt(item.error.reason)}` : ''}`;
    // The key: the status and the error's type (a class name such as mapper_parsing_exception), not its reason.
    const key = `HTTP ${status} ${type.slice(0, 100)}`;
    return { index, reason, key, retryable: status === 429 || status >= 500 };
  }

  /** NDJSON: an action line and the document, per event (or the one digest). */
  private bulkBody(work: BatchWork): string {
    const action = this.mode === 'data-stream' ? 'create' : 'index';
    const lines: string[] = [];
    const add = (id: string, time: string, json: string) => {
      const target = this.mode === 'data-stream' ? this.index : `${this.index}-${dayOf(time)}`;
      lines.push(JSON.stringify({ [action]: { _index: target, _id: id } }));
      // The event's own JSON, with @timestamp first: no second serialization.
      lines.push(`{"@timestamp":${JSON.stringify(time)},${json.slice(1)}`);
    };
    if (work.kind === 'digest') {
      const payload = work.digest.toPayload();
      add(payload.id, payload.to, JSON.stringify({ type: 'DIGEST', ...payload }));
    } else {
      work.events.forEach((event: KubediffEvent, index) => {
        add(event.id, event.time, work.json[index] as string);
      });
    }
    return `${lines.join('\n')}\n`;
  }

  /** PUT _index_template/<name>. */
  private putTemplate(): Promise<PostOutcome> {
    const url = new URL(this.base);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/_index_template/${templateName(this.index)}`;
    return post(this.agent, url, JSON.stringify(indexTemplate(this.index, this.mode)), {
      method: 'PUT',
      headers: this.headers,
      timeoutMs: this.timeoutMs,
      signal: this.clock.deadlineSignal,
      credentials: this.credentials,
    });
  }
}

function authorization(auth: SearchAuth | undefined): Record<string, string> {
  if (!auth) return {};
  if ('apiKey' in auth) return { authorization: `ApiKey ${auth.apiKey}` };
  return { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` };
}

/** 'YYYY.MM.DD' (UTC) of an RFC 3339 time, as daily index names have it. */
export function dayOf(time: string): string {
  const date = /^(\d{4})-(\d{2})-(\d{2})T/.exec(time);
  if (date) return `${date[1]}.${date[2]}.${date[3]}`;
  return isoTimestamp().slice(0, 10).replace(/-/g, '.');
}
