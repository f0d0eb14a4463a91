//! The five measurements of issue 7, one module each; every one runs in a namespace of its own.

pub mod call;
pub mod e2e;
pub mod get;
pub mod life;
pub mod scale;
