# syntax=docker/dockerfile:1
# One service's compiled binary (`npm run build`) on a minimal glibc image, as a non-root user:
#   docker build --build-arg SERVICE=api -t commerce-api .
#   docker build --build-arg SERVICE=payments -t commerce-payments .
# The binary reads only its environment (docs/configuration.md) and carries its migrations.
ARG SERVICE=api

FROM node:22-bookworm-slim AS build
WORKDIR /src
# Manifests first, so the npm ci layer is reused until the dependencies change.
COPY package.json package-lock.json ./
COPY shared/package.json shared/
COPY services/api/package.json services/api/
COPY services/payments/package.json services/payments/
# npm ci's postinstall applies these to node_modules (patch-package); the build checks they are in.
COPY patches/ patches/
RUN npm ci --no-audit --no-fund
COPY . .
# bun build --compile embeds the Bun runtime of its target; TARGETARCH comes from BuildKit.
ARG TARGETARCH
RUN if [ "$TARGETARCH" = "arm64" ]; then export BUN_BUILD_TARGET=bun-linux-arm64; fi \
  && npm run build

FROM gcr.io/distroless/cc-debian12:nonroot AS runtime
WORKDIR /app
USER nonroot:nonroot
# E5: production mode (the binary already is: scripts/build.ts); said here too for what reads it.
ENV NODE_ENV=production
ENTRYPOINT ["/app/service"]
# `--healthcheck` asks the running service's own GET /ready on $PORT: 503 until the database and
# NATS are up.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/app/service", "--healthcheck"]

FROM runtime AS api
COPY --from=build /src/dist/api /app/service
EXPOSE 3000

FROM runtime AS payments
COPY --from=build /src/dist/payments /app/service
EXPOSE 3001

# The stage named by SERVICE becomes the image.
FROM ${SERVICE}
