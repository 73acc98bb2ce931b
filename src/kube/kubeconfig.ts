// Finds the cluster and credentials the way kubectl does: --kubeconfig, then
// $KUBECONFIG (a list of files, merged), then ~/.kube/config, then the
// in-cluster ServiceAccount. @kubernetes/client-node does the parsing and all
// authentication (tokens, client certificates, exec plugins, OIDC, rotated
// in-cluster tokens); kubediff only asks it for TLS material and headers.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { errorMessage, KubediffError, UsageError } from '../util/errors.ts';

export interface KubeconfigOptions {
  /** --kubeconfig */
  kubeconfig?: string | undefined;
  /** --context */
  context?: string | undefined;
}

export interface ClusterIdentity {
  kubeConfig: KubeConfig;
  /** The context in use ('in-cluster' when running in a pod). */
  contextName: string;
  /** The cluster's name in the kubeconfig, the default for --cluster-name. */
  clusterName: string;
  server: string;
}

const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * Where the pod's filesystem root is for the ServiceAccount files: '' (the real one), or a folder
 * standing in for it ($KUBEDIFF_IN_CLUSTER_ROOT), so that tests can run kubediff "as in a pod".
 */
function inClusterRoot(): string {
  return (process.env.KUBEDIFF_IN_CLUSTER_ROOT ?? '').replace(/\/+$/, '');
}

export function loadKubeconfig(options: KubeconfigOptions): ClusterIdentity {
  const kubeConfig = new KubeConfig();
  const source = describeSource(options);
  try {
    if (options.kubeconfig) {
      if (!existsSync(options.kubeconfig)) {
        throw new UsageError(
          `kubeconfig file ${options.kubeconfig} does not exist; check the --kubeconfig path.`,
        );
      }
      kubeConfig.loadFromFile(options.kubeconfig);
    } else if (process.env.KUBECONFIG || existsSync(join(homedir(), '.kube', 'config'))) {
      kubeConfig.loadFromDefault();
    } else if (process.env.KUBERNETES_SERVICE_HOST && existsSync(`${inClusterRoot()}${IN_CLUSTER_TOKEN}`)) {
      // The token file is read again every minute, so the kubelet's rotated tokens are picked up.
      kubeConfig.loadFromCluster(inClusterRoot());
    } else {
      throw new UsageError(
        'no kubeconfig found: ~/.kube/config does not exist and $KUBECONFIG is not set; pass --kubeconfig <file> or run inside a pod with a ServiceAccount.',
      );
    }
  } catch (error) {
    if (error instanceof KubediffError) throw error;
    throw new UsageError(
      `cannot read kubeconfig ${source}: ${oneLine(errorMessage(error))}; fix the file or pass another with --kubeconfig.`,
      { cause: error },
    );
  }

  if (options.context) {
    if (!kubeConfig.getContextObject(options.context)) {
      const known = kubeConfig.getContexts().map((context) => context.name);
      throw new UsageError(
        `context "${options.context}" is not in kubeconfig ${source}; known contexts: ${known.join(', ') || 'none'}.`,
      );
    }
    kubeConfig.setCurrentContext(options.context);
  }

  if (kubeConfig.getContexts().length === 0) {
    throw new UsageError(
      `kubeconfig ${source} defines no contexts, so it is not a usable kubeconfig; fix the file or pass another with --kubeconfig.`,
    );
  }
  const contextName = kubeConfig.getCurrentContext();
  if (!contextName || !kubeConfig.getContextObject(contextName)) {
    throw new UsageError(
      `kubeconfig ${source} has no current context; pass --context <name> or run \`kubectl config use-context <name>\`.`,
    );
  }
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster?.server) {
    throw new UsageError(
      `context "${contextName}" in kubeconfig ${source} names no cluster with a server address; fix the kubeconfig.`,
    );
  }
  return {
    kubeConfig,
    contextName: contextName === 'inClusterContext' ? 'in-cluster' : contextName,
    clusterName: cluster.name === 'inCluster' ? 'in-cluster' : cluster.name,
    server: cluster.server.replace(/\/+$/, ''),
  };
}

function describeSource(options: KubeconfigOptions): string {
  if (options.kubeconfig) return options.kubeconfig;
  if (process.env.KUBECONFIG) return `from $KUBECONFIG (${process.env.KUBECONFIG})`;
  return join(homedir(), '.kube', 'config');
}

function oneLine(text: string): string {
  // A YAML syntax error ends with a code frame (the offending lines and a caret) after a blank line.
  const [reason = text] = text.split(/\n\s*\n/);
  return reason
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/ \((\d+):(\d+)\)$/, ' at line $1, column $2')
    .replace(/\.$/, '');
}
