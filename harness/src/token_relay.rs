//! An HTTP relay from a free port on 127.0.0.1 to the front end that adds
//! `Authorization: Bearer <token>` to every request which has none, for the one client that
//! cannot send a token: the official conformance suite (its `server` command has no header or
//! auth option). Every other client in the tests sends its own token.
//!
//! Requests and responses are forwarded unchanged otherwise (the `Host` header included, so the
//! suite's DNS-rebinding scenario still sees its localhost `Host` refused or accepted by the
//! front end itself), and response bodies stream, so `subscriptions/listen` works through it.

use std::convert::Infallible;

use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, HeaderValue};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

type Body = BoxBody<bytes::Bytes, hyper::Error>;

/// A running relay; it stops accepting when dropped.
pub struct TokenRelay {
    /// The local port.
    pub port: u16,
    accept: tokio::task::JoinHandle<()>,
}

impl TokenRelay {
    /// Relays 127.0.0.1:<port> to `target` (`host:port`), adding `token` as a bearer token.
    pub async fn start(target: &str, token: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the token relay on 127.0.0.1");
        let port = listener.local_addr().expect("relay address").port();
        let authorization =
            HeaderValue::from_str(&format!("Bearer {token}")).expect("a token is a header value");
        let client: Client<HttpConnector, Incoming> =
            Client::builder(TokioExecutor::new()).build_http();
        let target = target.to_owned();
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (client, target, authorization) =
                    (client.clone(), target.clone(), authorization.clone());
                let service = service_fn(move |request| {
                    forward(
                        client.clone(),
                        target.clone(),
                        authorization.clone(),
                        request,
                    )
                });
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { port, accept }
    }
}

impl Drop for TokenRelay {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn forward(
    client: Client<HttpConnector, Incoming>,
    target: String,
    authorization: HeaderValue,
    mut request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let uri = format!("http://{target}{path}");
    *request.uri_mut() = match uri.parse() {
        Ok(uri) => uri,
        Err(e) => return Ok(bad_gateway(format!("relay cannot build {uri}: {e}"))),
    };
    request
        .headers_mut()
        .entry(AUTHORIZATION)
        .or_insert(authorization);
    match client.request(request).await {
        Ok(response) => Ok(response.map(BodyExt::boxed)),
        Err(e) => Ok(bad_gateway(format!("relay cannot reach {target}: {e}"))),
    }
}

fn bad_gateway(text: String) -> Response<Body> {
    eprintln!("{text}");
    let mut response = Response::new(
        Full::new(bytes::Bytes::from(text))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response
}
