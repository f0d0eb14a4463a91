# Images of the two binaries for real clusters. Build one per target:
#   docker build --target operator -t mcp-task-operator:0.1.0 .
#   docker build --target frontend -t mcp-task-frontend:0.1.0 .
# The tests build the same binaries into registry-free images instead (hack/build-images.sh).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin mcp-task-operator --bin mcp-task-frontend && \
    cp target/release/mcp-task-operator target/release/mcp-task-frontend /usr/local/bin/

FROM debian:bookworm-slim AS runtime
USER 65532:65532

FROM runtime AS operator
COPY --from=build /usr/local/bin/mcp-task-operator /usr/local/bin/mcp-task-operator
ENTRYPOINT ["/usr/local/bin/mcp-task-operator"]

FROM runtime AS frontend
COPY --from=build /usr/local/bin/mcp-task-frontend /usr/local/bin/mcp-task-frontend
ENTRYPOINT ["/usr/local/bin/mcp-task-frontend"]
