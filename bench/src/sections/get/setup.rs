//! The servers of the `tasks/get` section and the tasks they serve: four front ends (fast path
//! with `AUTH_MODE=none`, full path, static tokens, TokenReview), the plain rmcp server, the
//! JSON-RPC axum baseline and bare axum, each with a completed task per result size. The
//! results are text as tools return it (this checkout's own Rust sources), not one repeated
//! byte, so that the gzip-coded answers compress as real ones do.

use std::collections::BTreeMap;

use kube::Api;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::callers::{random_token, service_account, token};
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::Mcp;
use serde_json::json;

use crate::cluster::{ANONYMOUS, create_completed_task_as};
use crate::load::{self, Target};
use crate::mcp::{addr_of, tasks_get};
use crate::rmcp_server::RMCP_TOOL;
use crate::rounds::Contender;
use crate::sections::Bench;
use crate::servers::ServerProcess;

/// The result sizes measured: text bytes of the task's result, and their name.
pub const SIZES: [(usize, &str); 3] = [
    (1 << 10, "1 KiB"),
    (64 << 10, "64 KiB"),
    (512 << 10, "512 KiB"),
];
/// The audience of the TokenReview front end's tokens.
const AUDIENCE: &str = "mto-bench";
/// The static token's user, and so the owner of its task.
const STATIC_USER: &str = "bench-static";
/// The ServiceAccount whose token the TokenReview front end reviews.
const AGENT: &str = "bench-agent";

/// Every server, with a contender per (server, size) it is measured at.
pub struct Stack {
    /// Fast path (`AUTH_MODE=none`), one per size.
    pub fast: Vec<Contender>,
    /// The same front end and tasks, polled with `Accept-Encoding: gzip`, one per size.
    pub fast_gzip: Vec<Contender>,
    /// Full path (`FAST_GET=false`), one per size.
    pub full: Vec<Contender>,
    /// JSON-RPC axum baseline, one per size.
    pub jsonrpc: Vec<Contender>,
    /// Plain rmcp, 1 KiB.
    pub rmcp: Contender,
    /// Bare axum, the fast path's 1 KiB answer.
    pub axum: Contender,
    /// Static tokens (fast path), 1 KiB.
    pub static_tokens: Contender,
    /// TokenReview (fast path, reviews cached), 1 KiB.
    pub token_review: Contender,
    /// The front end's task of each size.
    pub ids: Vec<String>,
    /// Size of each answer, bytes (fast path, by size).
    pub answer_bytes: Vec<usize>,
    /// Size of each gzip-coded answer as sent, bytes, and what decoding it once cost this
    /// process, µs (median of 20); `None` where the answer was sent as it is.
    pub gzip: Vec<Option<(usize, f64)>>,
    /// Size of plain rmcp's 1 KiB answer, bytes.
    pub rmcp_answer_bytes: usize,
    /// The front end processes, first the fast one (killed when dropped).
    pub frontends: Vec<Frontend>,
    servers: Vec<ServerProcess>,
    files: Vec<std::path::PathBuf>,
}

impl Drop for Stack {
    fn drop(&mut self) {
        for file in &self.files {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// The environment of a front end with `AUTH_MODE=none` and the fast path on or off.
pub fn anonymous(fast: bool) -> [(&'static str, &'static str); 3] {
    [
        ("AUTH_MODE", "none"),
        ("ALLOW_UNAUTHENTICATED", "true"),
        ("FAST_GET", if fast { "true" } else { "false" }),
    ]
}

impl Stack {
    /// Creates the tasks, starts every server and waits until each answers `completed`.
    pub async fn start(bench: &Bench<'_>) -> Result<Self, String> {
        let Bench { client, ns, .. } = bench;
        let api: Api<McpTask> = Api::namespaced(client.clone(), ns);
        let mut ids = Vec::new();
        for (bytes, _) in SIZES {
            ids.push(
                create_completed_task_as(&api, "bench", ANONYMOUS, &result_text(bytes)?).await?,
            );
        }
        let kib = result_text(SIZES[0].0)?;
        let static_id = create_completed_task_as(&api, "bench", STATIC_USER, &kib).await?;
        let agent = format!("system:serviceaccount:{ns}:{AGENT}");
        let review_id = create_completed_task_as(&api, "bench", &agent, &kib).await?;
        service_account(client, ns, AGENT).await;
        let agent_token = token(ns, AGENT, Some(AUDIENCE));
        let static_token = random_token();
        let tokens = std::env::temp_dir().join(format!("mto-bench-tokens-{ns}.csv"));
        std::fs::write(&tokens, format!("{static_token},{STATIC_USER}\n"))
            .map_err(|e| format!("cannot write {}: {e}", tokens.display()))?;
        let mut files = vec![tokens.clone()];

        let tokens_path = tokens.to_string_lossy().into_owned();
        let frontends = vec![
            Frontend::start(ns, &anonymous(true)).await,
            Frontend::start(ns, &anonymous(false)).await,
            Frontend::start(
                ns,
                &[
                    ("AUTH_MODE", "static"),
                    ("STATIC_TOKENS_FILE", &tokens_path),
                ],
            )
            .await,
            Frontend::start(
                ns,
                &[("AUTH_MODE", "tokenreview"), ("TOKEN_AUDIENCES", AUDIENCE)],
            )
            .await,
        ];
        let per_size = |frontend: &Frontend, name: &str| -> Result<Vec<Contender>, String> {
            let addr = addr_of(&frontend.url)?;
            Ok(SIZES
                .iter()
                .zip(&ids)
                .map(|((_, size), id)| Contender {
                    name: format!("{name}, {size}"),
                    target: tasks_get(addr, std::slice::from_ref(id)),
                    pid: frontend.pid(),
                })
                .collect())
        };
        let fast = per_size(&frontends[0], "front end, fast path")?;
        let mut fast_gzip = per_size(&frontends[0], "front end, fast path, gzip")?;
        for contender in &mut fast_gzip {
            let accept = ("accept-encoding".to_owned(), "gzip".to_owned());
            contender.target.headers.push(accept);
        }
        let full = per_size(&frontends[1], "front end, full path")?;
        let with_token = |frontend: &Frontend, name: &str, id: &String, token: &str| {
            let mut target = tasks_get(addr_of(&frontend.url)?, std::slice::from_ref(id));
            target
                .headers
                .push(("authorization".to_owned(), format!("Bearer {token}")));
            Ok::<_, String>(Contender {
                name: name.to_owned(),
                target,
                pid: frontend.pid(),
            })
        };
        let static_tokens = with_token(&frontends[2], "static token", &static_id, &static_token)?;
        let token_review = with_token(
            &frontends[3],
            "TokenReview (cached)",
            &review_id,
            &agent_token,
        )?;

        // The watch delivers each status a moment after it was written.
        let mut results = BTreeMap::new();
        let mut answer_bytes = Vec::new();
        let mut first = None;
        for (contender, id) in fast.iter().zip(&ids) {
            let answer = wait_completed(&contender.target).await?;
            let value: serde_json::Value = serde_json::from_slice(&answer.body)
                .map_err(|e| format!("the front end's answer is not JSON: {e}"))?;
            results.insert(id.clone(), value["result"].clone());
            answer_bytes.push(answer.body.len());
            first.get_or_insert(answer);
        }
        for contender in full.iter().chain([&static_tokens, &token_review]) {
            wait_completed(&contender.target).await?;
        }
        let mut gzip = Vec::new();
        for contender in &fast_gzip {
            gzip.push(gzip_coded(&contender.target).await?);
        }
        let first = first.ok_or("no result size")?;

        let body_file = std::env::temp_dir().join(format!("mto-bench-{ns}.json"));
        std::fs::write(&body_file, &first.body)
            .map_err(|e| format!("cannot write {}: {e}", body_file.display()))?;
        files.push(body_file.clone());
        let map_file = std::env::temp_dir().join(format!("mto-bench-map-{ns}.json"));
        std::fs::write(&map_file, serde_json::to_vec(&results).unwrap_or_default())
            .map_err(|e| format!("cannot write {}: {e}", map_file.display()))?;
        files.push(map_file.clone());

        let axum_server = ServerProcess::start(&[
            "serve-axum",
            &first.content_type,
            &body_file.to_string_lossy(),
        ])
        .await?;
        let jsonrpc_server =
            ServerProcess::start(&["serve-jsonrpc", &map_file.to_string_lossy()]).await?;
        let rmcp_server = ServerProcess::start(&["serve-rmcp"]).await?;
        let rmcp_id = Mcp::new(&format!("http://{}/mcp", rmcp_server.addr))
            .start_task(RMCP_TOOL, json!({ "bytes": SIZES[0].0 }))
            .await;
        let rmcp = Contender {
            name: "plain rmcp, 1 KiB".to_owned(),
            target: tasks_get(rmcp_server.addr, std::slice::from_ref(&rmcp_id)),
            pid: rmcp_server.pid()?,
        };
        let rmcp_answer_bytes = wait_completed(&rmcp.target).await?.body.len();
        let axum = Contender {
            name: "bare axum".to_owned(),
            target: tasks_get(axum_server.addr, std::slice::from_ref(&ids[0])),
            pid: axum_server.pid()?,
        };
        let jsonrpc = SIZES
            .iter()
            .zip(&ids)
            .map(|((_, size), id)| {
                Ok(Contender {
                    name: format!("JSON-RPC axum, {size}"),
                    target: tasks_get(jsonrpc_server.addr, std::slice::from_ref(id)),
                    pid: jsonrpc_server.pid()?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        for contender in &jsonrpc {
            wait_completed(&contender.target).await?;
        }
        Ok(Self {
            ids,
            fast,
            fast_gzip,
            full,
            jsonrpc,
            rmcp,
            axum,
            static_tokens,
            token_review,
            answer_bytes,
            gzip,
            rmcp_answer_bytes,
            frontends,
            servers: vec![axum_server, jsonrpc_server, rmcp_server],
            files,
        })
    }

    /// The process ID of every server.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self.frontends.iter().map(Frontend::pid).collect();
        pids.extend(self.servers.iter().filter_map(|s| s.pid().ok()));
        pids
    }
}

/// `bytes` of text as a tool returns it: this checkout's Rust sources (`mcp-frontend/src`,
/// then `operator/src`, files in name order), repeated as needed and cut at a character.
fn result_text(bytes: usize) -> Result<String, String> {
    fn sources(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                sources(&path, files)?;
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
        Ok(())
    }
    let root = mcp_task_operator_harness::repo_dir();
    let mut files = Vec::new();
    for dir in ["mcp-frontend/src", "operator/src"] {
        sources(&root.join(dir), &mut files).map_err(|e| format!("cannot list {dir}: {e}"))?;
    }
    files.sort();
    let mut text = String::new();
    for file in &files {
        let source = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        text.push_str(&source);
    }
    if text.is_empty() {
        return Err(format!("no Rust sources under {}", root.display()));
    }
    let mut out = text.repeat(bytes / text.len() + 1);
    let mut cut = bytes;
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    Ok(out)
}

/// What the answer of `coded` (a poll with `Accept-Encoding: gzip`) was: its size and a
/// decode's cost when gzip-coded, `None` when sent as it is. Fails unless it decodes to the
/// bytes the same poll without that header is answered with.
async fn gzip_coded(coded: &Target) -> Result<Option<(usize, f64)>, String> {
    let mut plain = coded.clone();
    plain.headers.retain(|(name, _)| name != "accept-encoding");
    let (coded, plain) = (load::once(coded).await?, load::once(&plain).await?);
    if coded.content_encoding.is_empty() {
        return if coded.body == plain.body {
            Ok(None)
        } else {
            Err(format!(
                "the answer with Accept-Encoding: gzip differs from the one without:\n{}\n{}",
                String::from_utf8_lossy(&coded.body),
                String::from_utf8_lossy(&plain.body)
            ))
        };
    }
    if coded.content_encoding != "gzip" {
        return Err(format!(
            "answered with Content-Encoding {}",
            coded.content_encoding
        ));
    }
    let decode = || {
        let mut out = Vec::with_capacity(plain.body.len());
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&coded.body[..]), &mut out)
            .map(|_| out)
            .map_err(|e| format!("the gzip-coded answer does not decode: {e}"))
    };
    if decode()? != plain.body {
        return Err("the gzip-coded answer decodes to other bytes than the plain one".to_owned());
    }
    let mut costs: Vec<f64> = (0..20)
        .map(|_| {
            let started = std::time::Instant::now();
            let _ = decode();
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    costs.sort_by(f64::total_cmp);
    Ok(Some((coded.body.len(), costs[costs.len() / 2])))
}

/// Polls `target` until its task is completed; returns that answer.
pub async fn wait_completed(target: &Target) -> Result<load::Answer, String> {
    for _ in 0..200 {
        let answer = load::once(target).await?;
        if answer.status == 200
            && serde_json::from_slice::<serde_json::Value>(&answer.body)
                .is_ok_and(|v| v["result"]["status"] == "completed")
        {
            return Ok(answer);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Err(format!(
        "the task at {} never answered completed",
        target.addr
    ))
}
