// ResourceType fixtures for unit tests that need one without asking an API server for discovery.
import type { ResourceType } from '../../src/kube/types.ts';

/** core/v1 configmaps as discovery describes them. */
export const configmaps: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
  verbs: ['list', 'watch'],
  shortNames: ['cm'],
  singularName: 'configmap',
  categories: [],
};

/** core/v1 secrets: redacted because of what they are (src/diff/redact.ts). */
export const secrets: ResourceType = {
  ...configmaps,
  resource: 'secrets',
  kind: 'Secret',
  shortNames: [],
  singularName: 'secret',
};

/** apps/v1 deployments, which have a `scale` subresource. */
export const deployments: ResourceType = {
  group: 'apps',
  version: 'v1',
  resource: 'deployments',
  kind: 'Deployment',
  namespaced: true,
  verbs: ['list', 'watch'],
  shortNames: ['deploy'],
  singularName: 'deployment',
  categories: ['all'],
};
