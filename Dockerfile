# Images of the binaries for real clusters. Build one per target (docker, buildah and podman
# take the same arguments; docs/RELEASING.md):
#   docker build --target operator -t REGISTRY/mcp-task-operator:0.1.0 .
#   docker build --target frontend -t REGISTRY/mcp-task-frontend:0.1.0 .
#   docker build --target bridge -t REGISTRY/mcp-bridge:0.1.0 .
# `make release-test` builds them with buildah, pushes them to a local registry and installs the
# chart from there by digest. The other test tiers build registry-free images of the same
# binaries instead (hack/build-images.sh).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin mcp-task-operator --bin mcp-task-frontend && \
    cp target/release/mcp-task-operator target/release/mcp-task-frontend /usr/local/bin/

# The bridge (operator.bridgeImage): one static binary, so that it runs in any MCP server image,
# which an init container copies into the tool pod.
FROM build AS build-bridge
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --locked -p mcp-bridge \
      --target x86_64-unknown-linux-gnu && \
    cp target/x86_64-unknown-linux-gnu/release/mcp-bridge /usr/local/bin/

FROM debian:bookworm-slim AS runtime
USER 65532:65532

FROM runtime AS operator
COPY --from=build /usr/local/bin/mcp-task-operator /usr/local/bin/mcp-task-operator
ENTRYPOINT ["/usr/local/bin/mcp-task-operator"]

FROM runtime AS frontend
COPY --from=build /usr/local/bin/mcp-task-frontend /usr/local/bin/mcp-task-frontend
ENTRYPOINT ["/usr/local/bin/mcp-task-frontend"]

FROM scratch AS bridge
COPY --from=build-bridge /usr/local/bin/mcp-bridge /mcp-bridge
USER 65532:65532
ENTRYPOINT ["/mcp-bridge"]
