//! A TCP relay to the Kubernetes API server that holds back everything the server sends by a
//! fixed delay, for a front end whose task watch must lag behind another replica's: its watch
//! events (and every other answer it gets) arrive `delay` late, as from a replica on a slow
//! or congested link. Bytes pass unchanged (TLS included: the server's certificate names
//! 127.0.0.1), in order, each chunk released `delay` after it arrived, except what the server
//! sends in the first [`HANDSHAKE_WINDOW`] of a connection (its TLS handshake): a new
//! connection costs one lag, not three, so the replica's API health probe (2 s timeout) still
//! passes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How long after a connection opens the server's bytes pass at once.
pub const HANDSHAKE_WINDOW: Duration = Duration::from_millis(300);

/// A running relay; it stops accepting when dropped (open connections end with the test).
pub struct LagProxy {
    /// The local port on 127.0.0.1.
    pub port: u16,
    accept: tokio::task::JoinHandle<()>,
}

impl LagProxy {
    /// Relays 127.0.0.1:<port> to `upstream` (`host:port`), delaying the server's bytes.
    pub async fn start(upstream: &str, delay: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the lag proxy on 127.0.0.1");
        let port = listener.local_addr().expect("proxy address").port();
        let upstream = upstream.to_owned();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&upstream).await {
                        relay(client, server, delay).await;
                    }
                });
            }
        });
        Self { port, accept }
    }

    /// A copy of the kubeconfig at `$KUBECONFIG` whose server is this relay, written to
    /// `dir`.
    pub fn kubeconfig(&self, dir: &Path) -> PathBuf {
        let (text, server) = current_kubeconfig();
        let url = server.trim_end_matches('/');
        let rewritten = text.replace(url, &format!("https://127.0.0.1:{}", self.port));
        let path = dir.join(format!("lagging-kubeconfig-{}", self.port));
        std::fs::write(&path, rewritten).expect("write the lagging kubeconfig");
        path
    }
}

impl Drop for LagProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// `host:port` of the API server in `$KUBECONFIG` (its first cluster).
pub fn api_server_address() -> String {
    let (_, server) = current_kubeconfig();
    server
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_owned()
}

fn current_kubeconfig() -> (String, String) {
    let path = std::env::var("KUBECONFIG").expect("KUBECONFIG is set for the real cluster");
    let text = std::fs::read_to_string(&path).expect("read $KUBECONFIG");
    let server = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("server:"))
        .expect("the kubeconfig names a server")
        .trim()
        .to_owned();
    (text, server)
}

async fn relay(client: TcpStream, server: TcpStream, delay: Duration) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
        let _ = server_write.shutdown().await;
    });
    // Chunks with the time each may go on; a writer releases them in order.
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let down = tokio::spawn(async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if client_write.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = client_write.shutdown().await;
    });
    let mut buffer = vec![0_u8; 64 * 1024];
    let opened = Instant::now();
    while let Ok(read) = server_read.read(&mut buffer).await {
        let now = Instant::now();
        let due = if now < opened + HANDSHAKE_WINDOW {
            now
        } else {
            now + delay
        };
        if read == 0 || tx.send((due, buffer[..read].to_vec())).is_err() {
            break;
        }
    }
    drop(tx);
    let _ = down.await;
    up.abort();
}
