# fsm-sync: the daemon beside a warehouse. Build: docker build -t fsm-sync .
# Run:   docker run -v fsm-data:/data -p 8787:8787 -e FSM_BASE_URL=... -e FSM_API_KEY=... fsm-sync
# The Node major both stages run on; another LTS: docker build --build-arg NODE_VERSION=24 ...
ARG NODE_VERSION=22

# Build stage: compilers for better-sqlite3's native module, the TypeScript build, then only what
# runs: production dependencies, and of better-sqlite3 its JavaScript and the one compiled module.
FROM node:${NODE_VERSION}-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# `prepare` builds, and the sources are not here yet: install without scripts, then build the
# native module explicitly.
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY connectors ./connectors
COPY emulator ./emulator
COPY config ./config
# The compiler's leftovers (object files, the SQLite amalgamation, sources) weigh about 25 MB; type
# declarations and source maps of the dependencies another 4 MB.
RUN npm run build \
 && npm prune --omit=dev \
 && find node_modules \( -name '*.d.ts' -o -name '*.d.[cm]ts' -o -name '*.map' \) -type f -delete \
 && cd node_modules/better-sqlite3 \
 && mv build/Release/better_sqlite3.node . \
 && rm -rf build deps src binding.gyp \
 && mkdir -p build/Release \
 && mv better_sqlite3.node build/Release/ \
 && cd /app \
 && node -e "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()"

# Runtime stage: no compilers, the non-root user by number (uid and gid 1000, `node` in the base
# image: Kubernetes' runAsNonRoot checks a number), the mirror on a volume that user owns.
FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production \
    FSM_DB=/data/fsm-mirror.db
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/config ./config
RUN ln -s /app/bin/fsm-sync.js /usr/local/bin/fsm-sync \
 && chmod +x /app/bin/fsm-sync.js \
 && mkdir -p /data && chown 1000:1000 /data
USER 1000:1000
VOLUME /data
EXPOSE 8787
# The daemon's listener as `run` reads it (httpHost, httpPort: flags, environment or config file).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 CMD ["fsm-sync", "healthcheck"]
ENTRYPOINT ["fsm-sync"]
CMD ["run"]
