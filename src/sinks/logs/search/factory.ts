// The OpenSearch and Elasticsearch sink types as src/sinks/registry.ts lists them (src/sinks/component.ts):
// their settings from config.ts, and a factory that imports the _bulk sink (search.ts) when one is made.
import { redactUrl } from '../../../util/url.ts';
import type { SinkComponent } from '../../component.ts';
import { logSinkOptions } from '../../core/sink-options.ts';
import {
  credentialsOfSearch,
  type SearchEntry,
  type SearchSinkSpec,
  searchChecks,
  searchFormats,
  searchSchemas,
  searchSpecOf,
} from './config.ts';

export const searchComponent: SinkComponent<SearchEntry, SearchSinkSpec> = {
  types: ['opensearch', 'elasticsearch'],
  schemas: searchSchemas,
  formats: searchFormats,
  checks: searchChecks,
  spec: searchSpecOf,
  name: (spec) => `${spec.type} ${redactUrl(spec.url)}`,
  credentials: credentialsOfSearch,
  async create(spec, context) {
    const { SearchSink } = await import('./search.ts');
    return new SearchSink({
      ...logSinkOptions(spec, this.name(spec), context),
      flavor: spec.type,
      url: spec.url,
      ...(spec.index ? { index: spec.index } : {}),
      ...(spec.mode ? { mode: spec.mode } : {}),
      ...(spec.installTemplate !== undefined ? { installTemplate: spec.installTemplate } : {}),
      ...(spec.auth ? { auth: spec.auth } : {}),
    });
  },
  docs: 'docs/sinks.md#opensearch-and-elasticsearch',
};
