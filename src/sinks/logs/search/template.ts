// The index template kubediff installs for its OpenSearch / Elasticsearch sink (docs/sinks.md): mappings
// that keep every event indexable whatever its values are. Dynamic mapping would fix the type of a field
// from the first document that has it, and `changes.from` / `changes.to` are a string in one change, a
// number or an object in the next (a ConfigMap value, spec.replicas, a container): the second document of
// another type would be refused. So the template maps only the fields people filter on (cluster,
// namespace, kind, name, type, user, manager, path…), as keywords, keeps `from`/`to` in the document
// without indexing them (object with enabled: false accepts any JSON value), and turns dynamic mapping off
// (`dynamic: false`): a field added to the event later is kept in _source and indexed by nothing until the
// template maps it. The same template works on OpenSearch 2.x and Elasticsearch 7.10+ and 8.x.

export type SearchIndexMode = 'daily' | 'data-stream';

const keyword = { type: 'keyword' } as const;
const unindexed = { type: 'object', enabled: false } as const;

/** The mappings of an event (and of a digest: kind, count, summary). */
export const EVENT_MAPPINGS = {
  dynamic: false,
  properties: {
    '@timestamp': { type: 'date' },
    id: keyword,
    type: keyword,
    time: { type: 'date' },
    cluster: keyword,
    object: {
      properties: {
        apiVersion: keyword,
        kind: keyword,
        resource: keyword,
        namespace: keyword,
        name: keyword,
        uid: keyword,
        resourceVersion: keyword,
      },
    },
    owner: { properties: { apiVersion: keyword, kind: keyword, name: keyword, uid: keyword } },
    by: {
      properties: {
        managers: {
          properties: { manager: keyword, operation: keyword, subresource: keyword, time: { type: 'date' } },
        },
        user: { properties: { username: keyword, groups: keyword, uid: keyword } },
        impersonatedUser: { properties: { username: keyword, groups: keyword, uid: keyword } },
        userAgent: keyword,
        sourceIPs: keyword,
        auditID: keyword,
        match: keyword,
      },
    },
    changes: { properties: { op: keyword, path: keyword, manager: keyword, from: unindexed, to: unindexed } },
    offline: { type: 'boolean' },
    finalStateUnknown: { type: 'boolean' },
    kind: keyword,
    count: { type: 'long' },
    summary: { type: 'text' },
  },
} as const;

/** The template's name: the index (or data stream) name it is for. */
export function templateName(index: string): string {
  return `${index}-kubediff`;
}

/** The composable index template (PUT _index_template/<name>) for `index` in `mode`. */
export function indexTemplate(index: string, mode: SearchIndexMode): Record<string, unknown> {
  return {
    index_patterns: [mode === 'daily' ? `${index}-*` : index],
    // Above the built-in templates (OpenSearch's and Elasticsearch's logs-*-* is 100).
    priority: 200,
    ...(mode === 'data-stream' ? { data_stream: {} } : {}),
    template: { mappings: EVENT_MAPPINGS },
    _meta: { managed_by: 'kubediff', description: 'kubediff change events (docs/sinks.md)' },
  };
}
