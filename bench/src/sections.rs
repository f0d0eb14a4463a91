//! The measurements, one module each; every one runs in a namespace of its own. `make bench`
//! runs the five of issue 7, the bridge's cost (issue 16) and warm starts (issue 38); `make
//! scale` runs the fleet on fake nodes (issue 14).

pub mod bridge;
pub mod call;
pub mod e2e;
pub mod fleet;
pub mod get;
pub mod life;
pub mod scale;
pub mod warm;

use kube::Client;

use crate::config::Config;

/// What a section runs with: the harness settings, a client, and a fresh namespace of its own
/// (deleted afterwards) in which the CRDs are installed.
pub struct Bench<'a> {
    /// The harness settings.
    pub config: &'a Config,
    /// A client of the local cluster.
    pub client: Client,
    /// The section's namespace.
    pub ns: &'a str,
}
