// `--no-stories slack,teams` as a user runs it: the real bin/kubediff.js watching the test API server, with
// local receivers as Slack, Teams and Discord. Which sinks tell stories is read from what kubediff serves
// on /metrics: a sink with stories on has a kubediff_stories_open_events series, one with them off has
// none. The five flags `--no-stories` replaced (`--no-slack-stories`, …) still do the same.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { killAll, runKubediff } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';

const READY = /watching \d+ resource types?/;
const PLATFORMS = ['slack', 'teams', 'discord'] as const;
let chat: HttpReceiver;

before(async () => {
  chat = await HttpReceiver.start();
});

after(async () => {
  await killAll();
  await chat.close();
});

/** Starts a watch posting to a Slack, a Teams and a Discord receiver; returns the platforms telling stories. */
async function platformsTellingStories(...storyFlags: string[]): Promise<string[]> {
  const kd = runKubediff(
    [
      'watch',
      '--kubeconfig',
      testCluster().kubeconfigPath,
      '-n',
      'kubediff-story-switches',
      '-r',
      'configmaps',
      '-o',
      'json',
      '--listen',
      '127.0.0.1:0',
      '--slack-webhook',
      chat.url('/slack'),
      '--teams-webhook',
      chat.url('/teams'),
      '--discord-webhook',
      chat.url('/discord'),
      ...storyFlags,
    ],
    { timeoutMs: 30_000 },
  );
  try {
    const base = (await kd.waitForStderr(SERVING))[1]!;
    await kd.waitForStderr(READY);
    const series = [...(await scrapeMetrics(base)).keys()];
    return PLATFORMS.filter((platform) =>
      series.some((key) => key.startsWith(`kubediff_stories_open_events{sink="${platform} `)),
    );
  } finally {
    const stopped = await kd.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
  }
}

describe('story switches', { timeout: 120_000 }, () => {
  it('every chat platform tells stories unless --no-stories names it', async () => {
    assert.deepEqual(await platformsTellingStories(), ['slack', 'teams', 'discord']);
    assert.deepEqual(await platformsTellingStories('--no-stories', 'slack,teams'), ['discord']);
    assert.deepEqual(await platformsTellingStories('--no-stories', 'discord', '--no-stories', 'teams'), [
      'slack',
    ]);
  });

  it('the old per-platform spellings still turn them off', async () => {
    assert.deepEqual(await platformsTellingStories('--no-slack-stories', '--no-discord-stories'), ['teams']);
  });
});
