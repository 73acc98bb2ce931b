// What a command opened, closed in the reverse order, whatever happens: the role AsyncDisposableStack
// plays on runtimes that have it (the Node 22 kubediff supports does not). Each cleanup runs once; one
// that fails does not keep the others from running, and its error is thrown once they all ran.

export class Lifecycle {
  private readonly cleanups: (() => Promise<void> | void)[] = [];
  private closed = false;

  /** Runs `cleanup` at close(), before everything deferred earlier. */
  defer(cleanup: () => Promise<void> | void): void {
    if (this.closed) throw new Error('Lifecycle: defer() after close()');
    this.cleanups.push(cleanup);
  }

  /** Adopts `resource`: its cleanup is deferred, and the resource returned. */
  use<T>(resource: T, cleanup: (resource: T) => Promise<void> | void): T {
    this.defer(() => cleanup(resource));
    return resource;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    let failure: { error: unknown } | undefined;
    for (const cleanup of this.cleanups.reverse()) {
      try {
        await cleanup();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }
}
