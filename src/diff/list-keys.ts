// How items of a Kubernetes list are recognized across two versions of an object, so that inserting
// one container is one `add`, not a cascade of replaces. Mirrors the merge keys of the API's
// strategic merge patch (patchMergeKey), without needing the schema of every type.

import type { JsonObject, JsonValue } from '../kube/types.ts';
import { isJsonObject } from '../kube/types.ts';
import { getProperty } from './json.ts';

/** Port keys include the protocol: the same port number may be open for TCP and UDP. */
const PORT_FIELDS = ['containerPort', 'port'] as const;

/** Further keys, in order of precedence, after `name` and the ports. */
const SINGLE_FIELD_KEYS = ['mountPath', 'devicePath', 'ip', 'type', 'topologyKey', 'key'] as const;

/** The API server defaults a missing protocol to TCP; treating them alike keeps the item matched. */
const DEFAULT_PROTOCOL = 'TCP';

/**
 * The identity of a list item, or undefined when it has none (then it is matched by position):
 * `name` when it is a string (containers, env, volumes, volumeMounts, named ports …), else the first
 * present of containerPort(+protocol), port(+protocol), mountPath, devicePath, ip (hostAliases),
 * type (conditions), topologyKey, key (tolerations, items). The field name is part of the identity,
 * so a port 80 never matches an item whose `key` is 80.
 */
export function listItemKey(item: JsonValue): string | undefined {
  if (!isJsonObject(item)) return undefined;
  const name = getProperty(item, 'name');
  if (typeof name === 'string') return `name=${name}`;
  for (const field of PORT_FIELDS) {
    const port = scalarField(item, field);
    if (port !== undefined) {
      const protocol = scalarField(item, 'protocol') ?? JSON.stringify(DEFAULT_PROTOCOL);
      return `${field}=${port}/${protocol}`;
    }
  }
  for (const field of SINGLE_FIELD_KEYS) {
    const value = scalarField(item, field);
    if (value !== undefined) return `${field}=${value}`;
  }
  return undefined;
}

/** A key field's value as text; JSON quoting keeps the number 80 apart from the string "80". */
function scalarField(item: JsonObject, field: string): string | undefined {
  const value = getProperty(item, field);
  if (typeof value === 'string' || typeof value === 'number') return JSON.stringify(value);
  return undefined;
}
