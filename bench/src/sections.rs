//! The five measurements of issue 7 and the bridge's cost of issue 16, one module each; every
//! one runs in a namespace of its own.

pub mod bridge;
pub mod call;
pub mod e2e;
pub mod get;
pub mod life;
pub mod scale;
