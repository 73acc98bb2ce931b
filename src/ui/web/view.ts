/// <reference lib="dom" />
// The view, held in the address (so it can be pasted into an incident channel): the time window, the
// filters, the rows, and the object open with its selected event.
export interface View {
  /** ms since the epoch; `live` windows end at the newest event and follow new ones. */
  from: number;
  to: number;
  live: boolean;
  rows: 'namespace' | 'kind';
  filters: Record<FilterName, string>;
  types: string[];
  object?: { cluster?: string; kind: string; namespace?: string; name: string; seq?: number };
}

export const FILTER_NAMES = ['cluster', 'namespace', 'kind', 'name', 'manager', 'user', 'path'] as const;
export type FilterName = (typeof FILTER_NAMES)[number];
export const TYPES = ['ADDED', 'UPDATED', 'DELETED'];
export const HOUR = 3_600_000;

export function readView(search: string, newest: number): View {
  const params = new URLSearchParams(search);
  const from = Date.parse(params.get('from') ?? '');
  const to = Date.parse(params.get('to') ?? '');
  const live = Number.isNaN(to);
  const end = live ? Math.max(Date.now(), newest) + 60_000 : to;
  const view: View = {
    from: Number.isNaN(from) ? end - HOUR : from,
    to: end,
    live,
    rows: params.get('rows') === 'kind' ? 'kind' : 'namespace',
    filters: Object.fromEntries(FILTER_NAMES.map((name) => [name, params.get(name) ?? ''])) as Record<
      FilterName,
      string
    >,
    types: params
      .get('type')
      ?.split(',')
      .filter((type) => TYPES.includes(type)) ?? [...TYPES],
  };
  const kind = params.get('object.kind');
  const name = params.get('object.name');
  if (kind && name) {
    view.object = { kind, name };
    const namespace = params.get('object.namespace');
    if (namespace) view.object.namespace = namespace;
    const cluster = params.get('object.cluster');
    if (cluster) view.object.cluster = cluster;
    const seq = Number(params.get('object.seq'));
    if (seq > 0) view.object.seq = seq;
  }
  return view;
}

/** The filters as the API takes them. */
export function filterParams(view: View): URLSearchParams {
  const params = new URLSearchParams();
  for (const name of FILTER_NAMES) if (view.filters[name]) params.set(name, view.filters[name]);
  if (view.types.length < TYPES.length) params.set('type', view.types.join(','));
  return params;
}

export function writeView(view: View): void {
  const params = filterParams(view);
  if (!view.live) {
    params.set('from', new Date(view.from).toISOString());
    params.set('to', new Date(view.to).toISOString());
  } else if (view.to - view.from !== HOUR) {
    params.set('from', new Date(view.from).toISOString());
  }
  if (view.rows !== 'namespace') params.set('rows', view.rows);
  if (view.object) {
    params.set('object.kind', view.object.kind);
    if (view.object.namespace) params.set('object.namespace', view.object.namespace);
    params.set('object.name', view.object.name);
    if (view.object.cluster) params.set('object.cluster', view.object.cluster);
    if (view.object.seq) params.set('object.seq', String(view.object.seq));
  }
  const search = params.toString();
  history.replaceState(null, '', search ? `?${search}` : location.pathname);
}
