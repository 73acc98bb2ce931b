// The flags for running kubediff as a service (in a cluster): the health and metrics server, leader
// election, the log format. Kept apart from the watch settings (src/config) so that both can grow
// independently; a config file maps onto the same fields.
import {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  defaultIdentity,
  defaultLeaseName,
  defaultLeaseNamespace,
  type LeaderElectionConfig,
} from '../kube/leader-election.ts';
import type { ServiceOptions } from '../service/service.ts';
import { parseDurationSetting } from '../util/duration.ts';
import { UsageError } from '../util/errors.ts';
import { parseListenAddress } from '../util/http-server.ts';

export interface RawServiceFlags {
  listen?: string;
  readyFailureThreshold?: string;
  leaderElect?: boolean;
  leaderElectionNamespace?: string;
  leaderElectionId?: string;
  leaderElectionIdentity?: string;
  leaderElectionLeaseDuration?: string;
  leaderElectionRenewDeadline?: string;
  leaderElectionRetryPeriod?: string;
  logFormat?: string;
}

const DEFAULT_READY_FAILURE_THRESHOLD_MS = 60_000;

function duration(flag: string, text: string | undefined, fallback: number): number {
  return text === undefined ? fallback : parseDurationSetting(flag, text);
}

export function serviceOptionsFromFlags(
  flags: RawServiceFlags,
  env: NodeJS.ProcessEnv = process.env,
): ServiceOptions {
  if (flags.listen !== undefined) parseListenAddress(flags.listen);
  const logFormat = flags.logFormat ?? 'auto';
  if (logFormat !== 'text' && logFormat !== 'json' && logFormat !== 'auto') {
    throw new UsageError(`invalid --log-format "${logFormat}": use text, json or auto.`);
  }
  const leaderFlagsWithout = (
    [
      ['--leader-election-namespace', flags.leaderElectionNamespace],
      ['--leader-election-id', flags.leaderElectionId],
      ['--leader-election-identity', flags.leaderElectionIdentity],
      ['--leader-election-lease-duration', flags.leaderElectionLeaseDuration],
      ['--leader-election-renew-deadline', flags.leaderElectionRenewDeadline],
      ['--leader-election-retry-period', flags.leaderElectionRetryPeriod],
    ] as const
  ).find(([, value]) => value !== undefined);
  if (!flags.leaderElect && leaderFlagsWithout) {
    throw new UsageError(`${leaderFlagsWithout[0]} needs --leader-elect.`);
  }
  let leaderElection: LeaderElectionConfig | undefined;
  if (flags.leaderElect) {
    const leaseDurationMs = duration(
      '--leader-election-lease-duration',
      flags.leaderElectionLeaseDuration,
      DEFAULT_LEASE_DURATION_MS,
    );
    const renewDeadlineMs = duration(
      '--leader-election-renew-deadline',
      flags.leaderElectionRenewDeadline,
      DEFAULT_RENEW_DEADLINE_MS,
    );
    const retryPeriodMs = duration(
      '--leader-election-retry-period',
      flags.leaderElectionRetryPeriod,
      DEFAULT_RETRY_PERIOD_MS,
    );
    if (!(leaseDurationMs > renewDeadlineMs)) {
      throw new UsageError(
        '--leader-election-lease-duration must be longer than --leader-election-renew-deadline (defaults 15s and 10s).',
      );
    }
    if (!(renewDeadlineMs > retryPeriodMs * 1.2)) {
      throw new UsageError(
        '--leader-election-renew-deadline must be longer than 1.2 × --leader-election-retry-period (defaults 10s and 2s).',
      );
    }
    const name = flags.leaderElectionId ?? defaultLeaseName(env);
    if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(name)) {
      throw new UsageError(
        `invalid --leader-election-id "${name}": a Lease name is lowercase letters, digits, "-" and ".".`,
      );
    }
    leaderElection = {
      namespace: flags.leaderElectionNamespace ?? defaultLeaseNamespace(env),
      name,
      identity: flags.leaderElectionIdentity ?? defaultIdentity(env),
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs,
    };
  }
  return {
    listen: flags.listen,
    readyFailureThresholdMs: duration(
      '--ready-failure-threshold',
      flags.readyFailureThreshold,
      DEFAULT_READY_FAILURE_THRESHOLD_MS,
    ),
    leaderElection,
    logFormat,
  };
}
