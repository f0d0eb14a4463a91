//! Tracing set-up shared by the operator and the MCP front end: log lines filtered by
//! `RUST_LOG`, and OpenTelemetry traces sent over OTLP/HTTP when an endpoint is set (off by
//! default; [`config`] reads the standard `OTEL_*` variables).
//!
//! One trace per task: the front end's `tools/call` span continues the client's W3C
//! `traceparent` ([`traceparent`]), the task stores the span's own, and the operator's reconcile
//! spans of that task take it as their parent. Only spans with target [`SPAN_TARGET`] are
//! exported, so the per-request and per-reconcile spans of libraries stay out of the traces.

pub mod config;
pub mod export;
pub mod traceparent;

use std::io::IsTerminal;

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider,
};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use config::ConfigError;
pub use traceparent::TraceParent;

/// Target of the spans exported as traces: `tracing::info_span!(target: SPAN_TARGET, ...)`.
pub const SPAN_TARGET: &str = "mcp_task_trace";

/// Why tracing could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An `OTEL_*` setting cannot be honoured.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Export is on but no Tokio runtime runs to send the requests on.
    #[error("tracing export needs a Tokio runtime: call init inside one")]
    NoRuntime,
    /// The OTLP exporter refused its settings (an endpoint it cannot parse, say).
    #[error("failed to build the OTLP trace exporter")]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
    /// A global subscriber was already installed.
    #[error("failed to install the tracing subscriber")]
    Install(#[source] tracing_subscriber::util::TryInitError),
}

/// The installed tracing; [`Telemetry::shutdown`] sends the spans still buffered.
#[derive(Debug)]
#[must_use = "call shutdown at exit, or buffered spans are lost"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// Installs the global subscriber: log lines (`log_filter`, with each event's target when
/// `show_target`) plus, when [`config::otlp_settings`] says so, the OTLP trace exporter for
/// `service_name` (unless `OTEL_SERVICE_NAME` names the service). Call once, inside the Tokio
/// runtime.
pub fn init(
    service_name: &'static str,
    log_filter: EnvFilter,
    show_target: bool,
) -> Result<Telemetry, Error> {
    let settings = config::otlp_settings(|var| std::env::var(var).ok())?;
    let logs = tracing_subscriber::fmt::layer()
        .with_target(show_target)
        // Colour codes only on a terminal: container logs stay plain text.
        .with_ansi(std::io::stdout().is_terminal())
        .with_filter(log_filter);
    let (traces, provider) = match settings {
        None => (None, None),
        Some(settings) => {
            let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_http_client(export::RuntimeClient::new(runtime, settings.timeout))
                .with_timeout(settings.timeout)
                .build()
                .map_err(Error::Exporter)?;
            let mut resource = Resource::builder();
            if std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| v.trim().is_empty())
                || std::env::var("OTEL_SERVICE_NAME").is_err()
            {
                resource = resource.with_service_name(service_name);
            }
            // The batch processor's queue is bounded (OTEL_BSP_MAX_QUEUE_SIZE, 2048 spans by
            // default): spans beyond it are dropped, never buffered without limit.
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource.build())
                .build();
            (Some(trace_layer(&provider, service_name)), Some(provider))
        }
    };
    tracing_subscriber::registry()
        .with(logs)
        .with(traces)
        .try_init()
        .map_err(Error::Install)?;
    if provider.is_some() {
        tracing::info!(service = service_name, "exporting traces over OTLP/HTTP");
    }
    Ok(Telemetry { provider })
}

/// The layer that turns spans of [`SPAN_TARGET`] into OpenTelemetry spans of `provider`.
fn trace_layer<S>(provider: &SdkTracerProvider, service_name: &'static str) -> impl Layer<S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer(service_name))
        .with_filter(Targets::new().with_target(SPAN_TARGET, tracing::Level::INFO))
}

impl Telemetry {
    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Sends the spans still buffered and stops the exporter (bounded by the export timeout).
    pub async fn shutdown(self) {
        let Some(provider) = self.provider else {
            return;
        };
        // NB: blocks until the last export is answered, and that export runs on this runtime.
        match tokio::task::spawn_blocking(move || provider.shutdown()).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, "failed to send the last traces"),
            Err(error) => tracing::warn!(%error, "failed to send the last traces"),
        }
    }
}

/// Makes `parent` (a remote span: the client's, or the front end's `tools/call`) the parent
/// of `span`. Call before `span` is first entered; later it has no effect.
pub fn set_parent(span: &Span, parent: &TraceParent) {
    let flags = if parent.sampled() {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    let remote = SpanContext::new(
        TraceId::from_bytes(parent.trace_id().to_be_bytes()),
        SpanId::from_bytes(parent.span_id().to_be_bytes()),
        flags,
        true,
        TraceState::default(),
    );
    // An error only means no OpenTelemetry layer is installed (export off) or the span has
    // started: either way there is nothing to join.
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
}

/// The trace context of `span` as a `traceparent` (`None` when spans are not exported).
pub fn traceparent_of(span: &Span) -> Option<TraceParent> {
    let context = span.context();
    let span_context = context.span().span_context().clone();
    if !span_context.is_valid() {
        return None;
    }
    TraceParent::new(
        u128::from_be_bytes(span_context.trace_id().to_bytes()),
        u64::from_be_bytes(span_context.span_id().to_bytes()),
        span_context.is_sampled(),
    )
}

#[cfg(test)]
mod tests;
