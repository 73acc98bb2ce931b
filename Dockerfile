# syntax=docker/dockerfile:1
# kubediff's container image: `docker build -t kubediff .` (see docs/deploy.md).
#
# Three stages. The first compiles kubediff's TypeScript into dist/ (`npm run build`, with the dev
# dependencies: TypeScript's compiler); the second installs the production dependencies with npm; the
# last is a distroless Node.js 24 image (no shell, no package manager, a non-root user) holding only
# those dependencies, the launcher, the compiled dist/ and the web page's files.

# The bases, pinned by digest (a tag can be moved; a digest names one image): update both pins with each
# release (Dependabot proposes them, .github/dependabot.yml). Any image with the same layout will do:
# BUILD_IMAGE needs node and npm on PATH and a /bin/sh, RUNTIME_IMAGE node at /nodejs/bin/node and the
# user 65532. The tests build this file with buildah FROM bases made of Debian's packages and the Node.js
# binary of the npm registry (scripts/image-build.ts), passed as these two build arguments.
ARG BUILD_IMAGE=node:24-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot@sha256:14d42e2511532589a7c7e01a753667a74fcc96266e137e8125006b87b0c32d0a

FROM ${BUILD_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY scripts/build.ts ./scripts/build.ts
COPY src ./src
# Every dependency, as locked; --ignore-scripts skips the `node` package's download (this image has
# Node 24) and the "prepare" build, run here on its own. npm's settings for the machine that builds, if it
# needs any (a registry mirror, the CA of a TLS-inspecting proxy), come as a build secret, which no layer
# keeps: `docker build --secret id=npmrc,src=$HOME/.npmrc .` (without it, npm's defaults). npm's cache is
# a cache mount: kept between builds, never in a layer.
RUN --mount=type=secret,id=npmrc,target=/root/.npmrc --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund && npm run build

FROM ${BUILD_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only (--omit=dev), exactly as locked (npm ci): no second Node.js (the `node`
# package, a dev dependency, gives a checkout its Node 24; the runtime image brings its own).
# --ignore-scripts: no production dependency has an install script, and none may sneak in here.
RUN --mount=type=secret,id=npmrc,target=/root/.npmrc --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title="kubediff" \
      org.opencontainers.image.description="Watches a Kubernetes cluster and reports every change, field by field." \
      org.opencontainers.image.licenses="Apache-2.0"
WORKDIR /app
ENV NODE_ENV=production
# Owned by root and read-only for the process: it writes nothing, so a read-only root filesystem works.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY --from=build /app/dist ./dist
# The web page of `kubediff ui` and `watch --ui` is served from its own files (src/ui/assets.ts).
COPY src/ui/web ./src/ui/web
# A start of the image's own Node, as a check that what was copied runs. Exec form: no shell here.
RUN ["/nodejs/bin/node", "/app/bin/kubediff.js", "version"]
# distroless's "nonroot" user, numeric so that Kubernetes can verify runAsNonRoot.
USER 65532:65532
EXPOSE 8080
# Exec form, no shell and no init: node is PID 1 and receives SIGTERM itself. kubediff handles SIGTERM
# and SIGINT (drains its sinks, releases its Lease, exits 0) and starts no child processes in a pod,
# so there are no zombies to reap and tini adds nothing.
ENTRYPOINT ["/nodejs/bin/node", "/app/bin/kubediff.js"]
CMD ["watch", "--listen", ":8080", "--output", "json"]
