// Diagnostics go to stderr, never stdout: stdout carries only events.

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  debug(message: string): void;
}

export function stderrLogger(options: { debug: boolean }): Logger {
  const write = (message: string) => process.stderr.write(`kubediff: ${message}\n`);
  return {
    info: write,
    warn: (message) => write(`warning: ${message}`),
    debug: options.debug ? (message) => write(`debug: ${message}`) : () => {},
  };
}

export const silentLogger: Logger = { info: () => {}, warn: () => {}, debug: () => {} };
