# jobmon service image: `docker compose up` runs it beside TimescaleDB (docker-compose.yml).
# Two stages: the build stage installs everything, compiles the service into dist/ and builds the
# dashboard; the runtime stage has production dependencies only, the compiled service (no
# TypeScript sources, no tsx: docs/operations.md, "Building and running") and the built dashboard,
# and runs as the unprivileged `node` user.

FROM node:20-bookworm-slim AS build
WORKDIR /app
# The whole tree (less .dockerignore) before `npm ci`: its `prepare` script compiles src/ into
# dist/ and builds the dashboard from web/.
COPY . .
RUN npm ci --no-audit --no-fund
RUN npm run build:web --if-present && mkdir -p web/dist
# `prepare` built dist/; an image without it would not start, so the build stops here instead.
RUN test -f dist/Cli/main.js

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only, and no install scripts (the embedded PostgreSQL is not used here:
# the service runs on DATABASE_URL; the build stage has already compiled the service).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY sql ./sql
COPY --from=build /app/dist ./dist
COPY --from=build /app/web/dist ./web/dist
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "bin/jobmon.js", "serve"]
