// The short names of the built-in types, as kubectl knows them. Filters use discovery when the watch has
// it (custom resources' short names come from there); this table lets `kubediff validate` and a sink
// filter understand `deploy` or `cm` before discovery has answered.

const BUILTIN: Readonly<Record<string, string>> = {
  cm: 'configmaps',
  cs: 'componentstatuses',
  ep: 'endpoints',
  ev: 'events',
  limits: 'limitranges',
  no: 'nodes',
  ns: 'namespaces',
  pc: 'priorityclasses.scheduling.k8s.io',
  po: 'pods',
  pv: 'persistentvolumes',
  pvc: 'persistentvolumeclaims',
  quota: 'resourcequotas',
  rc: 'replicationcontrollers',
  sa: 'serviceaccounts',
  svc: 'services',
  deploy: 'deployments.apps',
  ds: 'daemonsets.apps',
  rs: 'replicasets.apps',
  sts: 'statefulsets.apps',
  cj: 'cronjobs.batch',
  hpa: 'horizontalpodautoscalers.autoscaling',
  ing: 'ingresses.networking.k8s.io',
  netpol: 'networkpolicies.networking.k8s.io',
  pdb: 'poddisruptionbudgets.policy',
  crd: 'customresourcedefinitions.apiextensions.k8s.io',
  crds: 'customresourcedefinitions.apiextensions.k8s.io',
  csr: 'certificatesigningrequests.certificates.k8s.io',
  sc: 'storageclasses.storage.k8s.io',
};

/** `deploy` → `deployments.apps`; undefined for anything else. */
export function builtinResourceFor(shortName: string): string | undefined {
  return Object.hasOwn(BUILTIN, shortName) ? BUILTIN[shortName] : undefined;
}
