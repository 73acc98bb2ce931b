// The RBAC rule that would make a forbidden list/watch work, for the warning kubediff prints when the API
// server answers 403 (src/informer/cluster-watcher.ts) and for `kubediff validate --cluster`.

export interface ForbiddenTarget {
  group: string;
  resource: string;
  /** Set when kubediff watches one namespace (-n): a Role there is enough. */
  namespace?: string | undefined;
}

/**
 * `add this rule to the Role of namespace shop (or a ClusterRole) bound to kubediff's identity:
 * apiGroups: ["apps"], resources: ["deployments"], verbs: ["list","watch"]`
 */
export function rbacHint(target: ForbiddenTarget, verbs: readonly string[] = ['list', 'watch']): string {
  const where = target.namespace
    ? `a Role in namespace ${target.namespace} (or a ClusterRole)`
    : 'a ClusterRole (a Role per namespace for -n)';
  const rule = `apiGroups: ["${target.group}"], resources: ["${target.resource}"], verbs: [${verbs.map((verb) => `"${verb}"`).join(',')}]`;
  return `to watch it, bind kubediff's identity to ${where} with the rule ${rule}`;
}
