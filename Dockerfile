# syntax=docker/dockerfile:1
# Build: compile TypeScript and generate the Prisma client with dev dependencies, then keep production ones only.
FROM node:20-bookworm-slim AS build
# better-sqlite3 (the spool) builds from source where no prebuilt binary can be fetched.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json prisma.config.ts ./
COPY scripts ./scripts
COPY prisma ./prisma
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY examples ./examples
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# Run: no compiler, no dev dependencies, not root.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
# The service applies prisma/migrations itself at start-up.
COPY --from=build --chown=node:node /app/prisma ./prisma
# The example receiver of README's change notifications, runnable in the image.
COPY --from=build --chown=node:node /app/examples ./examples
# The acknowledgment spool's volume (docker-compose.yml); a named volume takes this directory's owner.
RUN mkdir -p /var/lib/pozy-sync/spool && chown -R node:node /var/lib/pozy-sync
USER node
EXPOSE 3000
# Every role answers /health/ready on PORT (a worker serves only health and metrics there).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# Node itself is PID 1 and gets SIGTERM directly: main.ts drains, finishes or releases jobs, and exits 0.
CMD ["node", "dist/main.js"]
