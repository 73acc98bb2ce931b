// A first `kubediff watch --state` whose baseline of configmaps must be durable although a sink has not
// finished an event queued before it: the configmaps' LIST is held at an API front until a secret's event
// went to a webhook that does not answer, then released. Nothing here depends on timing: whatever the
// machine, when kubediff says "recording state in …" the baseline is in the store (src/state/recorder.ts)
// or it is not (before that guarantee, it was not: the webhook held every commit behind that event).
import type { TestContext } from 'node:test';
import { startApiFront } from './api-front.ts';
import { type KubediffProcess, runKubediff, WATCHING } from './cli.ts';
import { HttpReceiver } from './http-receiver.ts';
import { adminClient } from './kube-admin.ts';

export interface GatedFirstRun {
  /** The watch, which has said that it records state. */
  watch: KubediffProcess;
  /** The webhook answers from now on (the one it holds, and every later one). */
  openWebhook(): void;
}

/**
 * Starts the first run in `ns` (configmaps and secrets, `--state state`, `extra` arguments) and resolves
 * once it has said that it records state. Everything it started is stopped after `t`.
 */
export async function gatedFirstRun(
  t: TestContext,
  options: { ns: string; state: string; extra?: string[]; env?: Record<string, string> },
): Promise<GatedFirstRun> {
  const { ns, state } = options;
  const admin = adminClient();
  t.after(() => admin.close());
  const configmaps = `/api/v1/namespaces/${ns}/configmaps`;
  const secrets = `/api/v1/namespaces/${ns}/secrets`;
  const front = await startApiFront();
  t.after(() => front.close());
  const configmapsListed = front.hold((request) => request.path === configmaps && !request.watch);
  let webhookAnswers = false;
  const receiver = await HttpReceiver.start({ respond: () => (webhookAnswers ? undefined : { hang: true }) });
  t.after(() => receiver.close());
  const watch = runKubediff(
    [
      'watch',
      '--kubeconfig',
      await admin.writeKubeconfig(front.url),
      '-o',
      'json',
      '-n',
      ns,
      '-r',
      'configmaps',
      '-r',
      'secrets',
      '--state',
      state,
      '--webhook',
      receiver.url('/hook'),
      ...(options.extra ?? []),
    ],
    // Paged LISTs: a WATCH of secrets means that their LIST is over, so a secret created then is an event.
    { checkEvents: true, timeoutMs: 30_000, env: { KUBEDIFF_INITIAL_SYNC: 'list', ...options.env } },
  );
  await front.waitForRequests((request) => request.path === secrets && request.watch, 1);
  const early = await admin.create(secrets, { metadata: { name: 'early' }, data: { k: 'dg==' } });
  await watch.waitForEvent((event) => event.object.uid === early.metadata.uid, {
    description: 'the secret ADDED',
  });
  await receiver.waitForRequests(1);
  configmapsListed.release();
  await watch.waitForStderr(WATCHING);
  await watch.waitForStderr(/recording state in /);
  return {
    watch,
    openWebhook() {
      webhookAnswers = true;
      receiver.answerHanging({ status: 200 });
    },
  };
}
