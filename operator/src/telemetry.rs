//! Tracing setup: a `fmt` subscriber filtered by `RUST_LOG` (default `info`).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Installs the global tracing subscriber; call once at startup.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        // Colour codes only on a terminal: container logs stay plain text.
        .with_ansi(std::io::stdout().is_terminal())
        .init();
}
