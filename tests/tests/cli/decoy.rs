//! A Service someone else made in the namespace, labelled as the chart labels the front end's,
//! must never get the CLI's bearer token. The decoy's endpoint is a listener of this test on
//! the node's address, which records every request that reaches it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mcp_task_operator_harness::callers::caller_token;
use mcp_task_operator_harness::stack::{NODE_IP, Release, install, output_text};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::block_in_place;

use super::{CALLER, RELEASE, SETS, kubectl_mcp, plugin_dir};
use crate::common::prepare_examples_blocking;

/// The decoy's name: it sorts before the release's own Service, where a first match lands.
const DECOY: &str = "a-decoy";
/// The decoy's Service port.
const DECOY_PORT: i32 = 8080;
/// What the recorder answers every request.
const REFUSAL: &[u8] =
    b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
/// Longest kube-proxy may take to route a new Service.
const ROUTE_PATIENCE: Duration = Duration::from_secs(90);

/// A listener on the node's address that records the head of every request and answers 401.
struct Recorder {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Recorder {
    async fn start() -> Self {
        let listener = TcpListener::bind((NODE_IP, 0))
            .await
            .expect("bind the recorder on the node's address");
        let port = listener.local_addr().expect("recorder address").port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&heads);
        let accept = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let seen = Arc::clone(&seen);
                tokio::spawn(async move {
                    let head = read_head(&mut stream).await;
                    seen.lock().expect("recorder lock").push(head);
                    let _ = stream.write_all(REFUSAL).await;
                });
            }
        });
        Self {
            port,
            heads,
            accept,
        }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().expect("recorder lock").clone()
    }

    /// Waits until a request to `ip` (the decoy's cluster IP) reaches the recorder, since
    /// kube-proxy programs a new Service within about a minute; then forgets the probes.
    async fn wait_routed(&self, ip: &str) {
        let started = Instant::now();
        let port = u16::try_from(DECOY_PORT).expect("a port");
        loop {
            let connect = TcpStream::connect((ip, port));
            if let Ok(Ok(mut stream)) = tokio::time::timeout(Duration::from_secs(2), connect).await
            {
                let _ = stream
                    .write_all(b"GET /probe HTTP/1.1\r\nhost: probe\r\n\r\n")
                    .await;
                let mut answer = Vec::new();
                let read = stream.read_to_end(&mut answer);
                let _ = tokio::time::timeout(Duration::from_secs(2), read).await;
            }
            if self.heads().iter().any(|h| h.starts_with("GET /probe ")) {
                self.heads.lock().expect("recorder lock").clear();
                return;
            }
            assert!(
                started.elapsed() < ROUTE_PATIENCE,
                "the decoy's cluster IP {ip} never reached the recorder"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// The request head: the bytes up to the blank line (at most 16 KiB, 10 s).
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut buf = [0; 4096];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), read).await;
    String::from_utf8_lossy(&head).into_owned()
}

/// `head` with the value of its Authorization header left out (a live token).
fn redacted(head: &str) -> String {
    head.lines()
        .map(|line| match line.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("authorization") => {
                format!("{name}: <{} bytes>", value.trim().len())
            }
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Creates the decoy: a Service without a selector, labelled as the front end's, and an
/// EndpointSlice sending it to the recorder. Returns its cluster IP.
async fn create_decoy(client: &Client, ns: &str, recorder_port: u16) -> String {
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": DECOY, "labels": {"app.kubernetes.io/component": "mcp-frontend"}},
        "spec": {"ports": [{"name": "http", "port": DECOY_PORT, "protocol": "TCP"}]},
    }))
    .expect("a Service");
    let created = Api::<Service>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &service)
        .await
        .expect("create the decoy Service");
    let slice: EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": DECOY, "labels": {"kubernetes.io/service-name": DECOY}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [NODE_IP]}],
        "ports": [{"name": "http", "port": recorder_port, "protocol": "TCP"}],
    }))
    .expect("an EndpointSlice");
    Api::<EndpointSlice>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &slice)
        .await
        .expect("create the decoy's EndpointSlice");
    created
        .spec
        .and_then(|s| s.cluster_ip)
        .expect("the decoy has a cluster IP")
}

/// Before the fix the CLI took the first Service with the front end's label, the decoy, and
/// sent it the caller's token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_mcp_never_sends_its_token_to_a_second_service_labelled_as_the_front_end() {
    with_temp_ns("cli-decoy", |client, ns| async move {
        prepare_examples_blocking(&client).await;
        let _release = Release::new(&ns, RELEASE);
        block_in_place(|| install(&ns, RELEASE, SETS));
        caller_token(&client, &ns, RELEASE, CALLER).await;
        let recorder = Recorder::start().await;
        let decoy_ip = create_decoy(&client, &ns, recorder.port).await;
        recorder.wait_routed(&decoy_ip).await;
        let plugin = plugin_dir();
        let run = |extra: &[&str]| {
            let mut args = vec!["-n", ns.as_str(), "--service-account", CALLER];
            args.extend_from_slice(extra);
            args.extend_from_slice(&["call", "no_such_tool"]);
            block_in_place(|| kubectl_mcp(&plugin, &args))
        };
        let assert_untouched = |step: &str| {
            let heads = recorder.heads();
            assert!(
                heads.is_empty(),
                "{step}: the decoy received {} request(s), the first:\n{}",
                heads.len(),
                redacted(&heads[0])
            );
        };

        // 1. Two Services labelled as the front end, no --release: refused, both named.
        let out = run(&[]);
        assert_untouched("without --release");
        let text = output_text(&out);
        println!("--- two candidates, no --release\n{text}");
        assert_eq!(out.status.code(), Some(1), "{text}");
        for needle in [
            "2 Services in namespace",
            "a-decoy (no release label)",
            "(release cli)",
            "pass --release NAME",
        ] {
            assert!(text.contains(needle), "no {needle:?} in:\n{text}");
        }

        // 2. --release picks the release's own: the front end answers the caller (its tool
        //    list, authenticated), and the decoy still saw nothing.
        let out = run(&["--release", RELEASE]);
        assert_untouched("with --release");
        let text = output_text(&out);
        assert!(
            text.contains("no tool no_such_tool for you here"),
            "the release's front end did not answer:\n{text}"
        );

        // 3. A decoy that claims the release too: refused, since labels cannot tell.
        let forged = json!({"metadata": {"labels": {"app.kubernetes.io/instance": RELEASE}}});
        Api::<Service>::namespaced(client.clone(), &ns)
            .patch(DECOY, &PatchParams::default(), &Patch::Merge(&forged))
            .await
            .expect("label the decoy as the release's");
        let out = run(&["--release", RELEASE]);
        assert_untouched("with a forged release label");
        let text = output_text(&out);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(
            text.contains("2 Services of release cli") && text.contains("pass --url"),
            "{text}"
        );

        // 4. The decoy's route works: a token sent to it on purpose arrives. So the silence
        //    above is the CLI's choice, not a broken route.
        let url = format!("http://{decoy_ip}:{DECOY_PORT}/mcp");
        let out = block_in_place(|| {
            kubectl_mcp(
                &plugin,
                &["--url", &url, "--token", "probe", "call", "no_such_tool"],
            )
        });
        assert!(
            output_text(&out).contains("HTTP 401"),
            "{}",
            output_text(&out)
        );
        let heads = recorder.heads();
        assert!(
            heads.iter().any(|h| h
                .to_ascii_lowercase()
                .contains("authorization: bearer probe")),
            "the probe never reached the decoy: {heads:?}"
        );
    })
    .await;
}
