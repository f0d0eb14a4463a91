//! The measurements, one module each; every one runs in a namespace of its own. `make bench`
//! runs the first five; `make scale` runs the fleet on fake nodes.

pub mod call;
pub mod e2e;
pub mod fleet;
pub mod get;
pub mod life;
pub mod scale;
