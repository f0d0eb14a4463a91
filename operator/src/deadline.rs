//! A deadline on every Kubernetes API call the operator makes, so that a call to an API server
//! that stopped answering (a network partition, a hung connection) fails with an error instead
//! of stalling the reconcile, or the Lease renewal, that waits on it.
//!
//! The deadline covers the whole call: connecting, sending, the response head and the whole
//! response body. Watches (`watch=true`) and followed logs (`follow=true`) stream for as long
//! as they last and are exempt: kube-runtime's watcher bounds an idle watch itself, and a log
//! follower is restarted by the reconcile that owns it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::{Request, Response};
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use kube::client::{Body as KubeBody, ClientBuilder};
use tower::{BoxError, Layer, Service};

/// The body type of kube's default service stack.
type DynBody = Box<dyn Body<Data = Bytes, Error = BoxError> + Send + Unpin>;

/// A kube [`kube::Client`] for `config` whose every non-streaming call fails after `timeout`,
/// and whose every request is counted in `metrics` (`api_count.rs`).
pub fn client(
    config: kube::Config,
    timeout: Duration,
    metrics: std::sync::Arc<crate::metrics::Metrics>,
) -> kube::Result<kube::Client> {
    let builder = ClientBuilder::try_from(config)?;
    Ok(builder
        .with_layer(&DeadlineLayer(timeout))
        .with_layer(&crate::api_count::CountLayer(metrics))
        .build())
}

/// The error a call that ran out of time ends with.
#[derive(Debug, thiserror::Error)]
#[error("the Kubernetes API server did not answer within {0:?} (MCP_OPERATOR_API_TIMEOUT_SECONDS)")]
pub struct DeadlineExceeded(pub Duration);

/// Whether the request streams for as long as it lasts (a watch or a followed log).
pub fn is_streaming<B>(request: &Request<B>) -> bool {
    request.uri().query().is_some_and(|query| {
        query
            .split('&')
            .any(|pair| matches!(pair, "watch=true" | "watch=1" | "follow=true" | "follow=1"))
    })
}

/// A tower layer putting a deadline on each non-streaming request (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct DeadlineLayer(pub Duration);

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Deadline {
            inner,
            timeout: self.0,
        }
    }
}

/// The service [`DeadlineLayer`] makes.
#[derive(Debug, Clone)]
pub struct Deadline<S> {
    inner: S,
    timeout: Duration,
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<Response<DynBody>, BoxError>> + Send>>;

impl<S, B> Service<Request<KubeBody>> for Deadline<S>
where
    S: Service<Request<KubeBody>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<DynBody>;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<KubeBody>) -> Self::Future {
        let timeout = self.timeout;
        let streaming = is_streaming(&request);
        let until = tokio::time::Instant::now() + timeout;
        let call = self.inner.call(request);
        Box::pin(async move {
            let response = if streaming {
                call.await.map_err(Into::into)?
            } else {
                tokio::time::timeout_at(until, call)
                    .await
                    .map_err(|_| DeadlineExceeded(timeout))?
                    .map_err(Into::into)?
            };
            let deadline =
                (!streaming).then(|| (Box::pin(tokio::time::sleep_until(until)), timeout));
            Ok(response.map(|inner| Box::new(DeadlineBody { inner, deadline }) as DynBody))
        })
    }
}

/// A response body with its error boxed that, unless its call streams, fails once the call's
/// deadline passes.
struct DeadlineBody<B> {
    inner: B,
    /// When the call must have ended, and the time it was given; `None` for a streaming call.
    deadline: Option<(Pin<Box<tokio::time::Sleep>>, Duration)>,
}

impl<B> Body for DeadlineBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx).map_err(Into::into) {
            return Poll::Ready(frame);
        }
        let Some((sleep, timeout)) = self.deadline.as_mut() else {
            return Poll::Pending;
        };
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(DeadlineExceeded(*timeout).into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body_util::BodyExt;
    use tower::{ServiceExt, service_fn};

    use super::*;

    fn get(uri: &str) -> Request<KubeBody> {
        Request::get(uri).body(KubeBody::empty()).unwrap()
    }

    #[test]
    fn watches_and_followed_logs_are_streaming() {
        assert!(is_streaming(&get(
            "/apis/x/v1/namespaces/a/tasks?watch=true&resourceVersion=1"
        )));
        assert!(is_streaming(&get(
            "/api/v1/namespaces/a/pods/p/log?container=c&follow=true"
        )));
        assert!(!is_streaming(&get(
            "/api/v1/namespaces/a/pods/p/log?container=c"
        )));
        assert!(!is_streaming(&get(
            "/api/v1/namespaces/a/pods?labelSelector=watch%3Dtrue"
        )));
        assert!(!is_streaming(&get("/api/v1/namespaces/a/pods/p")));
    }

    /// A server that never answers: the call fails after the deadline.
    #[tokio::test(start_paused = true)]
    async fn a_call_without_an_answer_fails_at_the_deadline() {
        let hang = service_fn(|_: Request<KubeBody>| async {
            std::future::pending::<Result<Response<String>, Infallible>>().await
        });
        let layer = DeadlineLayer(Duration::from_secs(10));
        let started = tokio::time::Instant::now();
        let err = layer
            .layer(hang)
            .oneshot(get("/api/v1/namespaces/a/pods/p"))
            .await
            .err()
            .expect("the call fails");
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        assert!(
            err.to_string().contains("did not answer within 10s"),
            "{err}"
        );
    }

    /// A body that stops after its head: reading it fails at the deadline.
    #[tokio::test(start_paused = true)]
    async fn a_body_that_stops_coming_fails_at_the_deadline() {
        let stall = service_fn(|_: Request<KubeBody>| async {
            Ok::<_, Infallible>(Response::new(StalledBody))
        });
        let layer = DeadlineLayer(Duration::from_secs(10));
        let started = tokio::time::Instant::now();
        let response = layer
            .layer(stall)
            .oneshot(get("/api/v1/namespaces/a/pods"))
            .await
            .expect("a head");
        let err = response.into_body().collect().await.expect_err("fails");
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        assert!(err.to_string().contains("did not answer"), "{err}");
    }

    /// A watch is not cut short however long it lasts.
    #[tokio::test(start_paused = true)]
    async fn a_watch_outlives_the_deadline() {
        let stall = service_fn(|_: Request<KubeBody>| async {
            Ok::<_, Infallible>(Response::new(StalledBody))
        });
        let layer = DeadlineLayer(Duration::from_secs(10));
        let response = layer
            .layer(stall)
            .oneshot(get("/api/v1/namespaces/a/pods?watch=true"))
            .await
            .expect("a head");
        let read =
            tokio::time::timeout(Duration::from_secs(3600), response.into_body().collect()).await;
        assert!(read.is_err(), "the watch body is still open after an hour");
    }

    /// A body that never yields a frame.
    struct StalledBody;

    impl Body for StalledBody {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            Poll::Pending
        }
    }
}
