/** Environment variables as kubediff reads them: process.env, or a caller's own (a test, a config check). */
export type Env = Readonly<Record<string, string | undefined>>;
