# fsm-sync: the daemon beside a warehouse. Build: docker build -t fsm-sync .
# Run:   docker run -v fsm-data:/data -p 8787:8787 -e FSM_BASE_URL=... -e FSM_API_KEY=... fsm-sync

# Build stage: compilers for better-sqlite3's native module, then the TypeScript build, then
# only production dependencies are kept.
FROM node:22-bookworm-slim AS build
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
RUN npm run build && npm prune --omit=dev

# Runtime stage: no compilers, a non-root user, the mirror on a volume.
FROM node:22-bookworm-slim
ENV NODE_ENV=production \
    FSM_DB=/data/fsm-mirror.db \
    FSM_HTTP_HOST=0.0.0.0 \
    FSM_HTTP_PORT=8787
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/config ./config
RUN ln -s /app/bin/fsm-sync.js /usr/local/bin/fsm-sync \
 && chmod +x /app/bin/fsm-sync.js \
 && mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.FSM_HTTP_PORT || 8787) + '/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["fsm-sync"]
CMD ["run"]
