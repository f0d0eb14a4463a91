//! The HTTP client the OTLP exporter sends with: hyper (already in both binaries through kube
//! and axum) on the binary's own Tokio runtime.
//!
//! NB: the SDK's batch span processor exports from a plain OS thread, where no Tokio runtime
//! runs; each request is therefore spawned onto the runtime the binary started with, and only
//! its result is awaited on that thread.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use tokio::runtime::Handle;

/// Largest collector answer read (an OTLP answer is a few bytes, or a short error).
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Sends OTLP/HTTP requests on `runtime`, each bounded by `timeout`.
#[derive(Debug, Clone)]
pub struct RuntimeClient {
    client: Client<HttpConnector, Full<Bytes>>,
    runtime: Handle,
    timeout: Duration,
}

impl RuntimeClient {
    /// A client for plain `http://` endpoints running its requests on `runtime`.
    pub fn new(runtime: Handle, timeout: Duration) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(timeout));
        connector.set_nodelay(true);
        Self {
            client: Client::builder(TokioExecutor::new()).build(connector),
            runtime,
            timeout,
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for RuntimeClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let timeout = self.timeout;
        let send = async move {
            let request = request.map(Full::new);
            let response = client.request(request).await?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, MAX_RESPONSE_BYTES)
                .collect()
                .await?
                .to_bytes();
            Ok::<_, HttpError>(Response::from_parts(parts, body))
        };
        let bounded = async move {
            tokio::time::timeout(timeout, send)
                .await
                .map_err(|_| HttpError::from(format!("no answer within {timeout:?}")))?
        };
        self.runtime.spawn(bounded).await?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A one-request HTTP server on loopback answering `answer`; returns its URL and the
    /// request it read.
    async fn serve_once(answer: &'static str) -> (String, tokio::task::JoinHandle<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/v1/traces", listener.local_addr().expect("addr"));
        let served = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.expect("accept");
            let mut read = Vec::new();
            let mut buf = [0u8; 4096];
            // Headers and the 5-byte body of the test request.
            while !String::from_utf8_lossy(&read).ends_with("hello") {
                let n = stream.read(&mut buf).await.expect("read");
                assert!(n > 0, "client closed early");
                read.extend_from_slice(&buf[..n]);
            }
            stream.write_all(answer.as_bytes()).await.expect("write");
            String::from_utf8_lossy(&read).into_owned()
        });
        (url, served)
    }

    /// Sends a POST of `hello` to `url` with `client` as the SDK's batch processor does: blocking
    /// on the export on a plain thread, where no runtime runs.
    fn send_from_a_plain_thread(
        client: RuntimeClient,
        url: String,
    ) -> Result<Response<Bytes>, HttpError> {
        std::thread::spawn(move || {
            let request = Request::post(url)
                .body(Bytes::from_static(b"hello"))
                .expect("request");
            futures::executor::block_on(client.send_bytes(request))
        })
        .join()
        .expect("thread")
    }

    #[test]
    fn a_request_sent_from_a_thread_without_a_runtime_runs_on_the_given_runtime() {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let (url, served) = runtime.block_on(serve_once(
            "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
        ));
        let client = RuntimeClient::new(runtime.handle().clone(), Duration::from_secs(10));
        let response = send_from_a_plain_thread(client, url).expect("answer");
        assert_eq!(response.status(), 200);
        assert_eq!(response.body().as_ref(), b"ok");
        let request = runtime.block_on(served).expect("served");
        assert!(request.starts_with("POST /v1/traces"), "{request}");
    }

    #[test]
    fn a_collector_that_never_answers_is_given_up_on_after_the_timeout() {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        // Accepts and reads, never answers.
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let url = format!("http://{}/v1/traces", listener.local_addr().expect("addr"));
        runtime.spawn(async move {
            let (mut stream, _) = listener.accept().await.expect("accept");
            let mut buf = [0u8; 4096];
            while stream.read(&mut buf).await.is_ok_and(|n| n > 0) {}
        });
        let client = RuntimeClient::new(runtime.handle().clone(), Duration::from_millis(200));
        let error = send_from_a_plain_thread(client, url).expect_err("times out");
        assert!(error.to_string().contains("no answer within"), "{error}");
    }
}
