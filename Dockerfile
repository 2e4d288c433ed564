# jobmon service image: `docker compose up` runs it beside TimescaleDB (docker-compose.yml).
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# `prepare` (web/prepare.mjs) finds no vite here and leaves the dashboard to the web stage.
COPY web/prepare.mjs ./web/
RUN npm ci --omit=dev --no-audit --no-fund

# The dashboard (docs/dashboard.md) is built with the dev dependencies, in a stage of its own.
FROM node:20-bookworm-slim AS web
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY web ./web
RUN npm run build:web

FROM node:20-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY sql ./sql
COPY --from=web /app/web/dist ./web/dist
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:8080/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
CMD ["node", "bin/jobmon.js", "serve"]
