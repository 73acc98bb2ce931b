// What kubediff's listeners (--listen's health and metrics, the UI, the audit and admission webhooks) closed
// to protect the watch beside them (src/util/listener-guard.ts): connections that failed, met the
// connection cap, or did not finish their TLS handshake. Read at each scrape.
import { Counter } from 'prom-client';
import { LISTENER_CLOSE_REASONS, type ListenerCloseReason } from '../../util/listener-guard.ts';
import type { MetricsRegistration } from '../../util/metrics-registration.ts';

/** A listener's guard: connections it closed, by reason. */
export interface ObservedListener {
  readonly listener: string;
  stats(): ReadonlyMap<ListenerCloseReason, number>;
}

/** Registers the series; returns where a listener started later is added. */
export function registerListenerMetrics(
  registration: MetricsRegistration,
): (listener: ObservedListener) => void {
  const listeners: ObservedListener[] = [];
  new Counter({
    name: 'kubediff_listener_connections_closed_total',
    help: 'Connections to a listener (health, ui, audit, admission) closed by kubediff, by reason: error (a failed connection, contained), limit (at the connection cap), address_limit (at the cap of one remote address), handshake_timeout (TLS).',
    labelNames: ['listener', 'reason'],
    registers: registration.registers,
    collect() {
      for (const guard of listeners) {
        const stats = guard.stats();
        for (const reason of LISTENER_CLOSE_REASONS) {
          const key = `listener\u0000${guard.listener}\u0000${reason}`;
          registration.incrementTo(this, { listener: guard.listener, reason }, stats.get(reason) ?? 0, key);
        }
      }
    },
  });
  return (listener) => listeners.push(listener);
}
