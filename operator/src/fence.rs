//! The lease fence: every call that changes something through the controllers' client is made
//! only while this replica's hold on the leader Lease is fresh, checked immediately before the
//! request leaves for the API server.
//!
//! A leader paused past its Lease (SIGSTOP, a VM freeze, a host that stalls) wakes with work
//! queued on an old view: a Job to create for a task the new leader has cancelled since, a status
//! to write over the one the new leader wrote. [`crate::leader::keep`] exits at the renew
//! deadline, but only once its timer is polled, and the controllers run beside it. The fence
//! does not wait for that: [`FenceLayer`] refuses a mutating request (any method but GET, HEAD
//! and OPTIONS) unless the last successful renewal started less than the renew deadline ago, by
//! the monotonic clock and by the wall clock both (a frozen VM's monotonic clock may not count
//! the time it was frozen; a wall clock stepped back counts as no time passed). A standby takes
//! the Lease over only a lease duration after the renewal, so a write that passes the fence
//! reaches the API server with at least `lease duration - renew deadline` to spare.
//!
//! Writes go on connections of their own, which check the fence again each time they are
//! polled, before they move bytes ([`FencedExecutor`]): a write that passed [`FenceLayer`] and
//! then waited in the client (the process frozen in between) is not sent once the hold is stale.
//!
//! What the fence cannot stop, the API server does: a pause between a connection's check and
//! its write (within one poll) is not seen here, so a terminal task's result and error are immutable
//! in the CRD's own validation rules, a Job is created only after its record in the task's
//! status was written with a resourceVersion precondition (`apply::record_job`), and the
//! Lease itself is renewed with one (`leader::try_hold`). See docs/RELIABILITY.md.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use axum::http::{Method, Request};
use kube::client::{Body as KubeBody, ClientBuilder};
use tokio::time::Instant;
use tower::{BoxError, Layer, Service};

/// The error of a mutating call refused because the Lease is not held (or no longer fresh).
#[derive(Debug, thiserror::Error)]
#[error(
    "refused to {method} {path}: this replica's hold on the leader Lease is not fresh (renewed \
     {age}), so another replica may lead"
)]
pub struct Fenced {
    /// The refused request's method.
    pub method: Method,
    /// The refused request's path.
    pub path: String,
    /// How long ago the last renewal started, or that there was none.
    pub age: String,
}

/// When a renewal of the Lease started, by both clocks.
#[derive(Debug, Clone, Copy)]
struct Renewal {
    monotonic: Instant,
    wall: SystemTime,
}

/// This replica's hold on the Lease, as the election loop last renewed it. Shared by the
/// election loop (which records renewals) and the controllers' client (which checks it).
#[derive(Debug)]
pub struct Fence {
    /// How long a renewal keeps the hold fresh: the renew deadline.
    valid_for: Duration,
    last: Mutex<Option<Renewal>>,
}

impl Fence {
    /// A fence closed until the first renewal; each renewal keeps it open for `valid_for`
    /// (the renew deadline).
    pub fn new(valid_for: Duration) -> Self {
        Self {
            valid_for,
            last: Mutex::new(None),
        }
    }

    /// Records a successful acquisition or renewal whose attempt started at `started`: the
    /// Lease it wrote says "renewed" no earlier than that.
    pub fn renewed(&self, started: Instant) {
        let wall = SystemTime::now()
            .checked_sub(started.elapsed())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        *self.lock() = Some(Renewal {
            monotonic: started,
            wall,
        });
    }

    /// Closes the fence for good (the Lease was lost, or released).
    pub fn close(&self) {
        *self.lock() = None;
    }

    /// Whether a write may be made now: `Ok`, or how long ago the last renewal started.
    pub fn check(&self) -> Result<(), String> {
        let last = *self.lock();
        let Some(renewal) = last else {
            return Err("never, or the Lease was lost".to_owned());
        };
        let age = age(renewal, Instant::now(), SystemTime::now());
        if age < self.valid_for {
            Ok(())
        } else {
            Err(format!(
                "{:.1} s ago, renew deadline {:.1} s",
                age.as_secs_f64(),
                self.valid_for.as_secs_f64()
            ))
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Renewal>> {
        // NB: nothing panics while holding it; a poisoned lock still holds a whole value.
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Time since `renewal` at (`monotonic`, `wall`): the larger of what the two clocks say. A
/// wall clock earlier than the renewal (stepped back) says no time passed.
fn age(renewal: Renewal, monotonic: Instant, wall: SystemTime) -> Duration {
    let by_wall = wall.duration_since(renewal.wall).unwrap_or_default();
    monotonic
        .saturating_duration_since(renewal.monotonic)
        .max(by_wall)
}

/// Whether `request` may change something (every method but GET, HEAD and OPTIONS).
pub fn is_mutating<B>(request: &Request<B>) -> bool {
    !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    )
}

/// The controllers' client: [`crate::deadline::client`]'s deadline and counting, with every
/// mutating call checked against `fence` last, immediately before it is sent, and sent on a
/// connection of the writes' own that checks the fence again each time it is about to move
/// bytes ([`FencedExecutor`]). Reads (lists, watches) go on connections of their own.
pub fn client(
    config: kube::Config,
    timeout: Duration,
    metrics: Arc<crate::metrics::Metrics>,
    fence: Arc<Fence>,
) -> kube::Result<kube::Client> {
    let default_namespace = config.default_namespace.clone();
    let reads = ClientBuilder::try_from(config.clone())?.build();
    let executor = FencedExecutor(Arc::clone(&fence));
    let writes = ClientBuilder::try_from((config, executor))?.build();
    Ok(
        ClientBuilder::new(ByMethod { reads, writes }, default_namespace)
            .with_layer(&FenceLayer(fence))
            .with_layer(&crate::deadline::DeadlineLayer(timeout))
            .with_layer(&crate::api_count::CountLayer(metrics))
            .build(),
    )
}

/// Sends mutating requests ([`is_mutating`]) with `writes`, the rest with `reads`.
#[derive(Clone)]
pub struct ByMethod {
    reads: kube::Client,
    writes: kube::Client,
}

impl Service<Request<KubeBody>> for ByMethod {
    type Response = axum::http::Response<KubeBody>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = kube::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Each client waits for its own readiness in `send`.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<KubeBody>) -> Self::Future {
        let client = match is_mutating(&request) {
            true => self.writes.clone(),
            false => self.reads.clone(),
        };
        Box::pin(async move { client.send(request).await })
    }
}

/// Runs the connections of the writes' client, each checking the fence every time it is
/// polled, before it moves any bytes: a connection polled while the fence is closed is dropped
/// (its request fails), so a write that passed [`FenceLayer`] and then waited (the process
/// frozen before the bytes left) is not sent after the Lease went stale. What remains is the
/// time between one poll's check and its write, and bytes the kernel holds already (those reach
/// the API server while the process is stopped, before a standby can take over).
#[derive(Debug, Clone)]
pub struct FencedExecutor(pub Arc<Fence>);

/// A future hyper hands its executor: a connection, or a connect finishing in the background.
type Spawned = Pin<Box<dyn Future<Output = ()> + Send>>;

impl hyper::rt::Executor<Spawned> for FencedExecutor {
    fn execute(&self, future: Spawned) {
        tokio::spawn(FencedConnection {
            fence: Arc::clone(&self.0),
            inner: future,
        });
    }
}

/// A connection of the writes' client, polled only while the fence is open.
struct FencedConnection {
    fence: Arc<Fence>,
    inner: Spawned,
}

impl Future for FencedConnection {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Err(age) = self.fence.check() {
            tracing::warn!(%age, "closing a write connection: the leader Lease is not fresh");
            return Poll::Ready(());
        }
        self.inner.as_mut().poll(cx)
    }
}

/// A tower layer refusing mutating requests while the [`Fence`] is not open.
#[derive(Debug, Clone)]
pub struct FenceLayer(pub Arc<Fence>);

impl<S> Layer<S> for FenceLayer {
    type Service = FenceService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        FenceService {
            inner,
            fence: Arc::clone(&self.0),
        }
    }
}

/// The service [`FenceLayer`] makes.
#[derive(Debug, Clone)]
pub struct FenceService<S> {
    inner: S,
    fence: Arc<Fence>,
}

type ResponseFuture<R> = Pin<Box<dyn Future<Output = Result<R, BoxError>> + Send>>;

impl<S> Service<Request<KubeBody>> for FenceService<S>
where
    S: Service<Request<KubeBody>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<KubeBody>) -> Self::Future {
        if is_mutating(&request)
            && let Err(age) = self.fence.check()
        {
            let refused = Fenced {
                method: request.method().clone(),
                path: request.uri().path().to_owned(),
                age,
            };
            tracing::error!(error = %refused, "refused a write: the leader Lease is not fresh");
            return Box::pin(std::future::ready(Err(refused.into())));
        }
        let call = self.inner.call(request);
        Box::pin(async move { call.await.map_err(Into::into) })
    }
}

#[cfg(test)]
mod tests;
