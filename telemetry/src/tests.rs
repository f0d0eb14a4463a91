//! Trace context through the real OpenTelemetry layer, with the SDK's in-memory exporter
//! standing in for the collector only (the OTLP path is tested against Jaeger in
//! tests/tests/tracing.rs).

use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing_subscriber::layer::SubscriberExt;

use super::*;

const CLIENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn with_traces<T>(run: impl FnOnce() -> T) -> (T, Vec<opentelemetry_sdk::trace::SpanData>) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry().with(trace_layer(&provider, "test"));
    let out = tracing::subscriber::with_default(subscriber, run);
    provider.force_flush().expect("flush");
    (out, exporter.get_finished_spans().expect("spans"))
}

#[test]
fn a_span_given_the_client_traceparent_joins_its_trace_as_a_child() {
    let client = TraceParent::parse(CLIENT).expect("valid");
    let (own, spans) = with_traces(|| {
        let span = tracing::info_span!(target: SPAN_TARGET, "tools/call");
        set_parent(&span, &client);
        let own = traceparent_of(&span).expect("exported span");
        span.in_scope(|| {});
        own
    });
    assert_eq!(own.trace_id(), client.trace_id());
    assert_ne!(own.span_id(), client.span_id());
    assert!(own.sampled());
    let [span] = spans.as_slice() else {
        panic!("one span expected: {spans:?}")
    };
    assert_eq!(span.name, "tools/call");
    assert_eq!(
        span.parent_span_id.to_bytes(),
        client.span_id().to_be_bytes()
    );
    assert_eq!(
        span.span_context.trace_id().to_bytes(),
        client.trace_id().to_be_bytes()
    );
}

#[test]
fn an_unsampled_client_trace_is_continued_but_not_recorded() {
    let client = TraceParent::parse(&CLIENT.replace("-01", "-00")).expect("valid");
    let (own, spans) = with_traces(|| {
        let span = tracing::info_span!(target: SPAN_TARGET, "tools/call");
        set_parent(&span, &client);
        traceparent_of(&span)
    });
    let own = own.expect("a valid context");
    assert_eq!(own.trace_id(), client.trace_id());
    assert!(!own.sampled());
    assert!(spans.is_empty(), "{spans:?}");
}

#[test]
fn without_a_client_traceparent_a_new_trace_starts() {
    let (own, spans) = with_traces(|| {
        let span = tracing::info_span!(target: SPAN_TARGET, "tools/call");
        traceparent_of(&span)
    });
    assert!(own.is_some_and(|t| t.sampled()));
    assert_eq!(spans.len(), 1);
    assert_eq!(
        spans[0].parent_span_id,
        opentelemetry::trace::SpanId::INVALID
    );
}

#[test]
fn spans_of_other_targets_are_not_exported_and_not_parents() {
    let (own, spans) = with_traces(|| {
        let library = tracing::info_span!("reconciling object");
        library.in_scope(|| {
            let span = tracing::info_span!(target: SPAN_TARGET, "reconcile");
            span.in_scope(|| {});
            traceparent_of(&span)
        })
    });
    assert!(own.is_some());
    let names: Vec<_> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, ["reconcile"]);
    assert_eq!(
        spans[0].parent_span_id,
        opentelemetry::trace::SpanId::INVALID
    );
}

#[test]
fn without_export_spans_have_no_trace_context() {
    let span = tracing::info_span!(target: SPAN_TARGET, "tools/call");
    set_parent(&span, &TraceParent::parse(CLIENT).expect("valid"));
    assert_eq!(traceparent_of(&span), None);
}
