// The Dockerfile, checked without a Docker engine: it parses and passes dockerfile-utils' validation
// (the linter of the VS Code Docker extension), and it keeps the rules the image is built on:
// multi-stage, kubediff compiled in a stage of its own, Node 24 at runtime, production dependencies
// only, a numeric non-root user, node as PID 1 through an exec-form ENTRYPOINT, nothing copied that
// .dockerignore leaves out.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DockerfileParser } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import { nonEmpty } from '../helpers/non-empty.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const text = readFileSync(`${root}Dockerfile`, 'utf8');
const dockerfile = DockerfileParser.parse(text);
const instructions = dockerfile.getInstructions();
const args = new Map(
  dockerfile
    .getARGs()
    .map((arg) => [arg.getProperty()?.getName() ?? '', arg.getProperty()?.getValue() ?? '']),
);
const resolve = (value: string) => value.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a, b) => args.get(a ?? b) ?? '');

/** The instructions of each stage, after its FROM. */
function stages(): { image: string; name: string | null; body: typeof instructions }[] {
  const result: { image: string; name: string | null; body: typeof instructions }[] = [];
  for (const instruction of instructions) {
    if (instruction.getKeyword() === 'FROM') {
      const from = dockerfile
        .getFROMs()
        .find((candidate) => candidate.getRange().start.line === instruction.getRange().start.line);
      result.push({ image: resolve(from?.getImage() ?? ''), name: from?.getBuildStage() ?? null, body: [] });
    } else {
      result.at(-1)?.body.push(instruction);
    }
  }
  return result;
}

test('the Dockerfile parses and has no diagnostics', () => {
  const diagnostics = validate(text);
  assert.deepEqual(
    diagnostics.map((diagnostic) => `line ${diagnostic.range.start.line + 1}: ${diagnostic.message}`),
    [],
  );
});

test('multi-stage: dependencies installed in one stage, a Node 24 runtime in the last', () => {
  const all = stages();
  assert.ok(all.length >= 2, 'at least two stages');
  const runtime = all.at(-1);
  assert.ok(runtime);
  assert.match(runtime.image, /(^|\/)(node:24|nodejs24)/, `the runtime is Node 24: ${runtime.image}`);
  for (const stage of all)
    assert.doesNotMatch(stage.image, /:latest$|^[^:]+$/, `${stage.image} names a version`);
  // The runtime stage installs nothing: at build time it only starts its own Node once (exec form:
  // distroless has no shell), to check that what it holds runs.
  assert.deepEqual(
    runtime.body.filter((instruction) => instruction.getKeyword() === 'RUN').map((i) => i.getTextContent()),
    ['RUN ["/nodejs/bin/node", "/app/bin/kubediff.js", "version"]'],
  );
});

/** The stage the runtime copies `what` from (COPY --from=<stage> /app/<what>). */
function sourceStage(what: string) {
  const runtime = stages().at(-1);
  const copy = runtime?.body
    .filter((instruction) => instruction.getKeyword() === 'COPY')
    .find((instruction) => instruction.getTextContent().includes(`/app/${what} `));
  const from = copy?.getTextContent().match(/--from=(\S+)/)?.[1];
  assert.ok(from, `the runtime copies /app/${what} from a build stage`);
  const stage = stages().find((candidate) => candidate.name === from);
  assert.ok(stage, `stage ${from}`);
  return stage;
}

test('kubediff is compiled in a stage of its own: the runtime holds dist/, not the TypeScript sources', () => {
  const build = sourceStage('dist');
  const runs = build.body
    .filter((instruction) => instruction.getKeyword() === 'RUN')
    .map((i) => i.getTextContent());
  assert.ok(
    runs.some((run) => /\bnpm ci\b.*&&\s*npm run build\b/s.test(run)),
    `npm ci then npm run build: ${runs.join(' | ')}`,
  );
  const runtimeCopies = (stages().at(-1)?.body ?? [])
    .filter((instruction) => instruction.getKeyword() === 'COPY')
    .map((i) => i.getTextContent());
  assert.ok(!runtimeCopies.some((copy) => /^COPY src\s/.test(copy)), 'no TypeScript sources in the image');
  assert.ok(runtimeCopies.includes('COPY src/ui/web ./src/ui/web'), "the web page's files");
});

test('production dependencies only, exactly as locked, without a second Node', () => {
  const deps = sourceStage('node_modules');
  const runs = deps.body
    .filter((instruction) => instruction.getKeyword() === 'RUN')
    .map((i) => i.getTextContent());
  const install = runs.find((run) => /\bnpm\s+ci\b/.test(run));
  assert.ok(install, 'npm ci (the lockfile, exactly)');
  assert.match(install, /--omit=dev/);
  assert.match(install, /--ignore-scripts/);
  const manifest = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  assert.ok(
    !('node' in manifest.dependencies),
    'the `node` package (a second Node.js) is no production dependency',
  );
  assert.ok('node' in manifest.devDependencies, "the `node` package gives a checkout's npm ci its Node 24");
  const everyRun = instructions
    .filter((instruction) => instruction.getKeyword() === 'RUN')
    .map((i) => i.getTextContent());
  assert.ok(!everyRun.some((run) => /\bnpm\s+(install|i)\b/.test(run)), 'no npm install');
});

test('a numeric non-root user, node as PID 1 in exec form', () => {
  const runtime = stages().at(-1);
  assert.ok(runtime);
  const users = runtime.body.filter((instruction) => instruction.getKeyword() === 'USER');
  assert.equal(users.length, 1);
  const user = users[0]?.getArgumentsContent() ?? '';
  assert.match(user, /^\d+(:\d+)?$/, 'numeric, so that Kubernetes can check runAsNonRoot');
  assert.notEqual(user.split(':')[0], '0');
  const entrypoints = dockerfile.getENTRYPOINTs();
  assert.equal(entrypoints.length, 1);
  const entrypoint = entrypoints[0];
  assert.ok(entrypoint);
  const words = entrypoint.getJSONStrings().map((word) => word.getJSONValue());
  assert.ok(words.length > 0, 'exec form (a JSON array): no shell in between to swallow SIGTERM');
  assert.match(words[0] ?? '', /\/node$/);
  assert.equal(words[1], '/app/bin/kubediff.js');
  const cmd = dockerfile.getCMDs()[0];
  assert.ok(cmd && cmd.getJSONStrings().length > 0, 'CMD in exec form');
});

test('everything copied from the build context exists and is not left out by .dockerignore', () => {
  const ignore = readFileSync(`${root}.dockerignore`, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  assert.equal(ignore[0], '*', '.dockerignore starts from nothing and lists what goes in');
  const allowed = ignore
    .filter((line) => line.startsWith('!'))
    .map((line) => line.slice(1).replace(/\/$/, ''));
  // The sources of every COPY from the build context (not --from another stage).
  const sources = dockerfile
    .getCOPYs()
    .filter((copy) => !copy.getFromFlag())
    .flatMap((copy) =>
      copy
        .getArguments()
        .map((argument) => argument.getValue())
        .slice(0, -1),
    );
  for (const source of nonEmpty(sources, 'COPY sources from the build context')) {
    assert.ok(existsSync(`${root}${source}`), `COPY ${source}: exists`);
    const wanted = source.replace(/\/$/, '');
    assert.ok(
      allowed.some((entry) => wanted === entry || wanted.startsWith(`${entry}/`)),
      `COPY ${source}: allowed by .dockerignore`,
    );
  }
  // What the image is built from: the launcher, the sources, the package manifest (read for the version).
  for (const needed of ['bin', 'src', 'package.json']) assert.ok(allowed.includes(needed), needed);
  assert.ok(!allowed.includes('node_modules') && !allowed.includes('test'), 'no host node_modules, no tests');
});

test('the default bases are pinned by digest, and each can be replaced by a build argument', () => {
  for (const name of ['BUILD_IMAGE', 'RUNTIME_IMAGE']) {
    assert.match(
      args.get(name) ?? '',
      /^[^@\s]+:[^@\s]+@sha256:[0-9a-f]{64}$/,
      `${name}: a tag and its digest`,
    );
  }
  const froms = dockerfile.getFROMs().map((from) => from.getImageName());
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's own ${…} references
  assert.deepEqual([...new Set(froms)].sort(), ['${BUILD_IMAGE}', '${RUNTIME_IMAGE}']);
});

test("npm's settings for the build come as a secret and its cache as a cache mount, which no layer keeps", () => {
  const installs = instructions
    .filter((instruction) => instruction.getKeyword() === 'RUN')
    .map((i) => i.getTextContent())
    .filter((run) => /\bnpm\s+ci\b/.test(run));
  assert.equal(installs.length, 2);
  for (const run of installs)
    assert.match(
      run,
      /^RUN --mount=type=secret,id=npmrc,target=\/root\/\.npmrc --mount=type=cache,target=\/root\/\.npm /,
      "npm's cache a cache mount too: in no layer",
    );
  assert.doesNotMatch(
    text,
    /^(COPY|ADD)[^\n]*npmrc|^ARG[^\n]*(TOKEN|npmrc)/im,
    'no npmrc copied or passed as an argument',
  );
});
