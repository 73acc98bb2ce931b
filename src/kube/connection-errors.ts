// Turns a failure to talk to the cluster at startup into one sentence that
// says what failed, where, and what to do about it.
import { KubediffError } from '../util/errors.ts';
import { formatSize } from '../util/size.ts';
import { KubeError } from './errors.ts';
import type { ClusterIdentity } from './kubeconfig.ts';
import { ResponseTooLarge } from './transport.ts';

export function explainConnectionFailure(error: unknown, identity: ClusterIdentity): unknown {
  if (!(error instanceof KubeError)) return error;
  const where = `${identity.server} (context "${identity.contextName}")`;
  switch (error.kind) {
    case 'network':
      return new KubediffError(
        `${error.message.replace(identity.server, where)}; check that the cluster is running and that the context is the right one.`,
        { cause: error },
      );
    case 'tls':
      return new KubediffError(
        `${error.message.replace(identity.server, where)}: the server's certificate is not trusted by the kubeconfig's certificate-authority; check certificate-authority-data (or tls-server-name) for this cluster.`,
        { cause: error },
      );
    case 'unauthorized':
      // No status: the credentials could not be made (a credential plugin failed); the server was not asked.
      if (error.status === undefined) return new KubediffError(`${error.message}.`, { cause: error });
      return new KubediffError(
        `the API server at ${where} rejected the credentials (401 Unauthorized); they may have expired: log in again or refresh the kubeconfig.`,
        { cause: error },
      );
    case 'forbidden':
      return new KubediffError(
        `the API server at ${where} refused discovery (403 Forbidden); the user needs get on the non-resource URLs /api and /apis (the default system:discovery role grants it).`,
        { cause: error },
      );
    case 'too-large':
      return new KubediffError(
        error instanceof ResponseTooLarge
          ? `the API server at ${where} answered ${error.path} with more than ${formatSize(error.limitBytes)}, the most kubediff reads at once; raise KUBEDIFF_MAX_READ_SIZE.`
          : `the API server at ${where}: ${error.message}; raise KUBEDIFF_MAX_READ_SIZE.`,
        { cause: error },
      );
    default:
      return new KubediffError(`the API server at ${where} failed: ${error.message}.`, { cause: error });
  }
}
