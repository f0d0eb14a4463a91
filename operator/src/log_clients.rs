//! The connections the log followers read through: HTTP/2, many followed logs on each.
//!
//! kube's default client speaks HTTP/1.1, where a followed log holds a connection (a socket, a
//! TLS session and its buffers) for as long as the tool runs: at 1,000 running tasks that was
//! about 120 KiB of the operator's memory per task (docs/BENCHMARKS.md). Over HTTP/2 one
//! connection carries many streams ([RFC 9113 §5](https://www.rfc-editor.org/rfc/rfc9113#section-5)),
//! so this pool leases each follower a place on a connection that carries fewer than the
//! configured number of streams, opening another connection only when all are full.
//!
//! The API server refuses streams past its `--http2-max-streams-per-connection` (100 by
//! default since Kubernetes 1.29's fix for CVE-2023-44487); a client that opens more waits for
//! a free one, which for followed logs may be never. So the pool's limit must stay below the
//! server's: 80 by default (`MCP_OPERATOR_LOG_STREAMS_PER_CONNECTION`; 0 keeps HTTP/1.1).
//!
//! Each connection sends a keep-alive PING every [`KEEP_ALIVE`] and closes if none is
//! answered within [`KEEP_ALIVE_TIMEOUT`]: a followed stream on a connection that died
//! silently (a partition, a node gone) ends with an error and its follower reads again, where
//! an HTTP/1.1 stream would wait on the dead socket.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::{ClientBuilder, ConfigExt};
use kube::{Client, Config};
use tower::{BoxError, ServiceBuilder};

use crate::api_count::CountLayer;
use crate::deadline::DeadlineLayer;
use crate::lock;
use crate::metrics::Metrics;

/// How often an HTTP/2 log connection is pinged.
pub const KEEP_ALIVE: Duration = Duration::from_secs(30);
/// How long a ping may go unanswered before the connection counts as dead.
pub const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(15);
/// Flow-control window of one followed stream: how many bytes of one log the API server may
/// send ahead of the follower's reads (a follower reads each chunk as it comes).
const STREAM_WINDOW: u32 = 64 * 1024;
/// Flow-control window of one connection, shared by its streams.
const CONNECTION_WINDOW: u32 = 1024 * 1024;

/// Where followers get the client they read through.
#[derive(Clone)]
pub struct LogClients {
    inner: Arc<Pool>,
}

struct Pool {
    config: Config,
    /// Deadline of every request but the followed streams (`deadline.rs`).
    timeout: Duration,
    metrics: Arc<Metrics>,
    /// Most streams on one connection.
    per_connection: usize,
    /// One client per connection, with the number of followers leasing it.
    clients: Mutex<Vec<(Client, usize)>>,
}

impl std::fmt::Debug for LogClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogClients")
            .field("per_connection", &self.inner.per_connection)
            .field("connections", &self.connections())
            .finish()
    }
}

/// A follower's place on a connection; given back when dropped.
pub struct LogLease {
    pool: Arc<Pool>,
    /// The client to read through.
    pub client: Client,
    /// Which of the pool's clients.
    index: usize,
}

impl Drop for LogLease {
    fn drop(&mut self) {
        if let Some((_, leased)) = lock(&self.pool.clients).get_mut(self.index) {
            *leased = leased.saturating_sub(1);
        }
    }
}

impl LogClients {
    /// Followers read over HTTP/2 connections to the API server of `config`, at most
    /// `per_connection` on each; `None` for 0 (each follower then reads over its own HTTP/1.1
    /// connection, through the operator's client). Every request but the followed streams
    /// fails after `timeout`; all are counted in `metrics`.
    pub fn http2(
        config: Config,
        per_connection: u16,
        timeout: Duration,
        metrics: Arc<Metrics>,
    ) -> Option<Self> {
        (per_connection > 0).then(|| Self {
            inner: Arc::new(Pool {
                config,
                timeout,
                metrics,
                per_connection: usize::from(per_connection),
                clients: Mutex::new(Vec::new()),
            }),
        })
    }

    /// A place for one follower: on the fullest connection that has room (so connections
    /// empty out and close when the load drops), or on a new one.
    pub fn lease(&self) -> kube::Result<LogLease> {
        let pool = &self.inner;
        let mut clients = lock(&pool.clients);
        // The fullest with room, the first of equals; an idle one reconnects when used.
        let fullest = clients
            .iter()
            .enumerate()
            .filter(|(_, (_, n))| *n < pool.per_connection)
            .max_by_key(|(i, (_, n))| (*n, std::cmp::Reverse(*i)))
            .map(|(i, _)| i);
        let index = match fullest {
            Some(i) => i,
            None => {
                let client = http2_client(&pool.config, pool.timeout, Arc::clone(&pool.metrics))?;
                clients.push((client, 0));
                clients.len() - 1
            }
        };
        clients[index].1 += 1;
        Ok(LogLease {
            pool: Arc::clone(pool),
            client: clients[index].0.clone(),
            index,
        })
    }

    /// HTTP/2 clients made so far that followers lease now.
    pub fn connections(&self) -> usize {
        lock(&self.inner.clients)
            .iter()
            .filter(|(_, n)| *n > 0)
            .count()
    }
}

/// A kube client for `config` that speaks HTTP/2 only, on one connection, with the operator's
/// deadline and request count (`deadline.rs`, `api_count.rs`).
fn http2_client(config: &Config, timeout: Duration, metrics: Arc<Metrics>) -> kube::Result<Client> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(config.connect_timeout);
    let tls = config.rustls_client_config()?;
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    let https = match &config.tls_server_name {
        Some(name) => https.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(
            name.clone().try_into().map_err(|e| {
                kube::Error::Service(BoxError::from(format!(
                    "invalid TLS server name {name}: {e}"
                )))
            })?,
        )),
        None => https,
    };
    let connector = https.enable_http2().wrap_connector(http);
    let hyper = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .http2_only(true)
        .timer(TokioTimer::new())
        .http2_initial_stream_window_size(STREAM_WINDOW)
        .http2_initial_connection_window_size(CONNECTION_WINDOW)
        .http2_keep_alive_interval(KEEP_ALIVE)
        .http2_keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
        .http2_keep_alive_while_idle(true)
        .build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(hyper);
    Ok(
        ClientBuilder::new(service, config.default_namespace.clone())
            .with_layer(&DeadlineLayer(timeout))
            .with_layer(&CountLayer(metrics))
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        let mut config = Config::new("https://127.0.0.1:6443".parse().unwrap());
        config.accept_invalid_certs = true;
        config
    }

    fn pool(per_connection: u16) -> Option<LogClients> {
        let metrics = Arc::new(Metrics::register(
            &mut prometheus_client::registry::Registry::default(),
        ));
        LogClients::http2(config(), per_connection, Duration::from_secs(5), metrics)
    }

    #[tokio::test]
    async fn followers_fill_a_connection_before_the_next_is_opened() {
        let logs = pool(2).unwrap();
        let a = logs.lease().unwrap();
        let b = logs.lease().unwrap();
        assert_eq!(logs.connections(), 1);
        let c = logs.lease().unwrap();
        assert_eq!(logs.connections(), 2);
        assert_eq!((a.index, b.index, c.index), (0, 0, 1));
        // A freed place is taken before a new connection is opened.
        drop(b);
        let d = logs.lease().unwrap();
        assert_eq!(d.index, 0);
        let e = logs.lease().unwrap();
        assert_eq!(e.index, 1, "the fuller connection with room first");
        assert_eq!(logs.connections(), 2);
        drop((a, c, d, e));
        assert_eq!(logs.connections(), 0);
        // An emptied connection is used again, not another one opened.
        let f = logs.lease().unwrap();
        assert_eq!(f.index, 0);
        assert_eq!(lock(&logs.inner.clients).len(), 2);
    }

    #[test]
    fn zero_per_connection_makes_no_pool() {
        assert!(pool(0).is_none());
    }
}
