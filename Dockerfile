# syntax=docker/dockerfile:1
#
# One image for both Herald services; the process is chosen by the command (the Helm chart sets it
# per component, see helm/herald):
#   hub     node services/hub/dist/main.js      port 8080
#   broker  node services/broker/dist/main.js   port 6632
#
#   docker build -t herald:dev .
#   docker run --rm -p 8080:8080 -e MERCURE_DEV=1 -e MERCURE_PUBLISHER_JWT_KEY=change-me herald:dev
#   docker run --rm -p 6632:6632 herald:dev node services/broker/dist/main.js
#
# test/helm/production-install.test.ts replays the production stage without Docker (same staged
# tree, the `npm ci` flags read from this file), since no Docker engine runs where this was written.

# The current LTS line, on which CI runs every test too (README, "Prerequisites").
ARG NODE_IMAGE=node:26-slim

# ---- build: install everything, compile every workspace ----------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
ENV TURBO_TELEMETRY_DISABLED=1 \
    NPM_CONFIG_UPDATE_NOTIFIER=false
COPY . .
# Install scripts stay off (npm 11 default; esbuild and msgpackr use their prebuilt optional packages).
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund
RUN npm run build
# The runtime tree: root manifest and lockfile, and for each workspace only its package.json,
# dist/ and lua/ (Lua scripts are loaded from <package>/lua at run time). No sources, no tests.
RUN set -eu; \
    mkdir /out; \
    cp package.json package-lock.json /out/; \
    for dir in shared/* services/* test; do \
      if [ ! -f "$dir/package.json" ]; then continue; fi; \
      mkdir -p "/out/$dir"; \
      cp "$dir/package.json" "/out/$dir/"; \
      for part in dist lua; do \
        if [ -d "$dir/$part" ]; then cp -R "$dir/$part" "/out/$dir/"; fi; \
      done; \
    done; \
    find /out -name '*.tsbuildinfo' -delete

# ---- production: runtime dependencies of the two services only ---------------------------------
FROM ${NODE_IMAGE} AS production
LABEL org.opencontainers.image.title="herald" \
      org.opencontainers.image.description="Herald Mercure hub and Queen-compatible broker"
ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false
WORKDIR /app
COPY --from=build /out/ ./
# --workspace keeps the `test` workspace's dependencies (playwright-core, kubernetes-models…) out;
# --omit=dev drops every devDependency. The npm cache lives in a build cache mount, not the image.
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund --workspace=@herald/hub --workspace=@herald/broker
# Numeric user, so the kubelet can verify runAsNonRoot; the files stay root-owned and read-only.
RUN groupadd --system --gid 10001 herald \
 && useradd --system --uid 10001 --gid herald --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin herald
USER 10001:10001
EXPOSE 8080 6632
# node runs as PID 1: the services install their own SIGTERM handlers (graceful drain), so no
# init process is needed for signal delivery.
# No Node flags here: the image runs both services and the flags below were measured on the broker
# only. Run the broker as the chart does (broker.nodeOptions and broker.command): NODE_OPTIONS
# =--max-semi-space-size=8 and `node --heap-growing-percent=50` (a V8 flag Node refuses in
# NODE_OPTIONS). On Node 26 the two take its peak RSS under 500-message pushes from 262-298 to
# 161-168 MB (docs/benchmarks.md, "Broker footprint"), e.g.
#   docker run -e NODE_OPTIONS=--max-semi-space-size=8 … herald \
#     node --heap-growing-percent=50 services/broker/dist/main.js
CMD ["node", "services/hub/dist/main.js"]
