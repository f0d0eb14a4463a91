use std::time::{Duration, SystemTime};

use axum::http::{Request, Response};
use kube::client::Body;
use tokio::time::Instant;
use tower::{Service, ServiceExt};

use super::*;

const RENEW_DEADLINE: Duration = Duration::from_secs(10);

fn request(method: Method) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri("/apis/batch/v1/namespaces/tools/jobs")
        .body(Body::empty())
        .expect("a request")
}

type Mock = tower_test::mock::Mock<Request<Body>, Response<Body>>;
type MockHandle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// A fenced service over a mock API server; returns it and the mock's handle.
fn fenced(fence: &Arc<Fence>) -> (FenceService<Mock>, MockHandle) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (FenceLayer(Arc::clone(fence)).layer(service), handle)
}

#[tokio::test(start_paused = true)]
async fn the_fence_is_open_only_within_the_renew_deadline_of_the_last_renewal() {
    let fence = Fence::new(RENEW_DEADLINE);
    assert!(fence.check().is_err(), "closed before the Lease is held");
    fence.renewed(Instant::now());
    assert!(fence.check().is_ok());
    tokio::time::advance(Duration::from_secs(9)).await;
    assert!(fence.check().is_ok(), "9 s after the renewal");
    fence.renewed(Instant::now() - Duration::from_secs(1));
    tokio::time::advance(Duration::from_secs(8)).await;
    assert!(fence.check().is_ok(), "renewed since");
    tokio::time::advance(Duration::from_secs(1)).await;
    let refused = fence.check().expect_err("10 s after the renewal's start");
    assert!(refused.contains("10.0 s ago"), "{refused}");
    fence.renewed(Instant::now());
    fence.close();
    assert!(fence.check().is_err(), "closed once the Lease is lost");
}

/// A VM frozen and resumed may come back with a monotonic clock that did not count the freeze:
/// the wall clock still shows the time passed.
#[test]
fn either_clock_ages_the_hold() {
    let start = Instant::now();
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let renewal = Renewal {
        monotonic: start,
        wall,
    };
    let later = |mono: u64, wall_s: i64| {
        let wall_now = if wall_s >= 0 {
            wall + Duration::from_secs(wall_s.unsigned_abs())
        } else {
            wall - Duration::from_secs(wall_s.unsigned_abs())
        };
        age(renewal, start + Duration::from_secs(mono), wall_now)
    };
    assert_eq!(later(3, 3), Duration::from_secs(3));
    assert_eq!(later(3, 40), Duration::from_secs(40), "frozen VM");
    assert_eq!(later(12, 2), Duration::from_secs(12), "wall clock slewed");
    assert_eq!(
        later(4, -60),
        Duration::from_secs(4),
        "wall clock stepped back"
    );
}

/// The controllers' work queued while the process was paused runs when it wakes, before the
/// election loop's timer says the Lease is lost: its writes are refused there and then, its
/// reads still go out.
#[tokio::test(start_paused = true)]
async fn a_write_after_the_renew_deadline_is_refused_before_it_is_sent() {
    let fence = Arc::new(Fence::new(RENEW_DEADLINE));
    fence.renewed(Instant::now());
    let (mut service, mut handle) = fenced(&fence);

    // Fresh: a POST reaches the API server.
    let sent = service
        .ready()
        .await
        .expect("ready")
        .call(request(Method::POST));
    let (seen, reply) = handle.next_request().await.expect("the POST was sent");
    assert_eq!(seen.method(), Method::POST);
    reply.send_response(Response::new(Body::empty()));
    sent.await.expect("answered");

    // Paused past the deadline (no renewal recorded meanwhile).
    tokio::time::advance(Duration::from_secs(15)).await;
    for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
        let refused = service
            .ready()
            .await
            .expect("ready")
            .call(request(method.clone()))
            .await
            .expect_err("refused");
        let fenced = refused.downcast_ref::<Fenced>().expect("a Fenced error");
        assert_eq!(fenced.method, method);
        assert!(refused.to_string().contains("15.0 s ago"), "{refused}");
    }
    // Reads pass: the mock sees the GET as the next request after the first POST.
    let read = service
        .ready()
        .await
        .expect("ready")
        .call(request(Method::GET));
    let (seen, reply) = handle.next_request().await.expect("the GET was sent");
    assert_eq!(seen.method(), Method::GET);
    reply.send_response(Response::new(Body::empty()));
    read.await.expect("answered");
}

#[test]
fn only_get_head_and_options_are_reads() {
    for (method, mutating) in [
        (Method::GET, false),
        (Method::HEAD, false),
        (Method::OPTIONS, false),
        (Method::POST, true),
        (Method::PUT, true),
        (Method::PATCH, true),
        (Method::DELETE, true),
    ] {
        assert_eq!(is_mutating(&request(method.clone())), mutating, "{method}");
    }
}

/// Serves one connection on loopback: answers every request `200` and counts the bytes that
/// arrived; returns the address and the count once the client hangs up.
async fn counting_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<usize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let address = listener.local_addr().expect("an address");
    let served = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("a connection");
        let mut seen = 0;
        let mut buffer = [0u8; 4096];
        while let Ok(n) = socket.read(&mut buffer).await {
            if n == 0 {
                break;
            }
            seen += n;
            let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
            let _ = socket.write_all(reply).await;
        }
        seen
    });
    (address, served)
}

/// A write that passed the fence's check and then waited (here: not polled until the fence
/// closed, as a frozen process's would be) never reaches the server: its connection checks the
/// fence before it moves a byte.
#[tokio::test]
async fn a_write_connection_first_polled_after_the_fence_closed_sends_nothing() {
    use http_body_util::Full;
    use hyper_util::client::legacy::Client as HttpClient;
    use hyper_util::client::legacy::connect::HttpConnector;

    let fence = Arc::new(Fence::new(RENEW_DEADLINE));
    fence.renewed(Instant::now());
    let client: HttpClient<HttpConnector, Full<bytes::Bytes>> =
        hyper_util::client::legacy::Builder::new(FencedExecutor(Arc::clone(&fence)))
            .build(HttpConnector::new());
    let post = |address: std::net::SocketAddr| {
        Request::post(format!(
            "http://{address}/apis/batch/v1/namespaces/tools/jobs"
        ))
        .body(Full::new(bytes::Bytes::from_static(b"{\"kind\":\"Job\"}")))
        .expect("a request")
    };
    // While the fence is open, a write goes out and is answered.
    let (address, served) = counting_server().await;
    let answered = client
        .request(post(address))
        .await
        .expect("sent while open");
    assert_eq!(answered.status(), 200);
    drop(client);
    assert!(served.await.expect("served") > 0);

    let client: HttpClient<HttpConnector, Full<bytes::Bytes>> =
        hyper_util::client::legacy::Builder::new(FencedExecutor(Arc::clone(&fence)))
            .build(HttpConnector::new());
    let (address, served) = counting_server().await;
    let pending = client.request(post(address));
    // The Lease goes stale before the request's connection ever runs.
    fence.close();
    let failed = pending.await.expect_err("refused once the fence closed");
    drop(client);
    assert_eq!(
        served.await.expect("served"),
        0,
        "bytes reached the server: {failed}"
    );
}
