// npm run cluster:down — stops the cluster that `npm run cluster:up` started and removes its files.
import { readState, stateFile, stopRecordedCluster } from './cluster-state.ts';

try {
  const state = readState();
  if (!state) {
    console.log(`cluster:down: no cluster recorded in ${stateFile}; nothing to stop`);
  } else {
    const stopped = await stopRecordedCluster(state);
    console.log(
      stopped.length > 0
        ? `cluster:down: stopped ${stopped.join(', ')}; removed ${state.dir}`
        : `cluster:down: its processes had already exited; removed ${state.dir}`,
    );
  }
} catch (error) {
  console.error(`cluster:down: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
