//! Unauthenticated and unfair load on the front end (issue 36 item 7), with the binary in
//! `tokenreview` mode against the real API server, as the chart runs it by default:
//!
//! - a bearer token that is not a JWT is refused locally, with a `WWW-Authenticate`
//!   `error_description` saying why, and costs no TokenReview (before, each distinct junk
//!   token cost one, inside the shared request budget);
//! - one caller holding every `subscriptions/listen` slot it may does not lock out another;
//! - one caller's synchronous calls holding request permits do not make another caller wait.

use std::sync::Arc;
use std::time::Duration;

use kube::Api;
use kube::api::ListParams;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::callers::{random_token, service_account, token};
use mcp_task_operator_harness::fixture_tools::serve_fixtures;
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::{Mcp, Reply};
use mcp_task_operator_harness::operator::WAIT;
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;
use tokio::sync::Mutex;

const AUDIENCE: &str = "mcp-task-operator-fairness-test";

/// TokenReviews the front end sent, whatever their outcome.
async fn token_reviews(frontend: &Frontend) -> u64 {
    let mut total = 0;
    for outcome in ["granted", "refused", "failed"] {
        let series = format!("mcp_frontend_reviews_total{{kind=\"token\",outcome=\"{outcome}\"}}");
        total += frontend.counter(&series).await;
    }
    total
}

/// A front end in `tokenreview` mode (RBAC off: these tests are about load) with `env`, and
/// clients for ServiceAccounts `alice` and `bob`.
async fn two_callers(
    client: &kube::Client,
    ns: &str,
    env: &[(&str, &str)],
) -> (Frontend, Mcp, Mcp) {
    let mut all = vec![
        ("AUTH_MODE", "tokenreview"),
        ("TOKEN_AUDIENCES", AUDIENCE),
        ("AUTHORIZATION_MODE", "none"),
    ];
    all.extend_from_slice(env);
    let frontend = Frontend::start(ns, &all).await;
    let mut callers = Vec::new();
    for name in ["alice", "bob"] {
        service_account(client, ns, name).await;
        callers.push(Mcp::new(&frontend.url).with_token(&token(ns, name, Some(AUDIENCE))));
    }
    let bob = callers.pop().expect("bob");
    let alice = callers.pop().expect("alice");
    alice.wait_for_tools(&["slow_compute"]).await;
    (frontend, alice, bob)
}

#[tokio::test]
async fn tokens_that_are_not_jwts_are_refused_without_a_token_review() {
    with_temp_ns("fe-junk", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let (frontend, alice, _) = two_callers(&client, &ns, &[]).await;
        let before = token_reviews(&frontend).await;
        let long = format!("eyJhbGciOiJSUzI1NiJ9.{}.c2ln", "a".repeat(20_000));
        let junk = [
            random_token(),
            random_token(),
            "a.b.c".to_owned(),
            // Base64url, but the header is not JSON.
            "bm90IGpzb24.e30.c2ln".to_owned(),
            // A JSON header without `alg`.
            "eyJ0eXAiOiJKV1QifQ.e30.c2ln".to_owned(),
            // An unsigned JWT.
            "eyJhbGciOiJub25lIn0.e30.c2ln".to_owned(),
            "eyJhbGciOiJSUzI1NiJ9.e30".to_owned(),
            "eyJhbGciOiJSUzI1NiJ9.e30.c2ln+/=".to_owned(),
            long,
        ];
        let mut challenges = Vec::new();
        for token in &junk {
            let reply = Mcp::new(&frontend.url)
                .with_token(token)
                .request("tools/list", json!({}), true)
                .await;
            assert_eq!(reply.status, 401, "{}", reply.body);
            challenges.push((token, reply.challenge.clone().unwrap_or_default()));
        }
        let reviews = token_reviews(&frontend).await - before;
        eprintln!("{} junk tokens: {reviews} TokenReview(s)", junk.len());
        assert_eq!(reviews, 0, "junk tokens must not cost TokenReviews");
        for (token, challenge) in challenges {
            eprintln!("{token:.40}: {challenge}");
            assert!(
                challenge.contains("error=\"invalid_token\"")
                    && challenge.contains("error_description=\"the bearer token is not a JWT"),
                "challenge for {token:.40}: {challenge}"
            );
        }
        // A real token still works, and a JWT for another audience is still reviewed.
        assert_eq!(
            alice.request("tools/list", json!({}), false).await.status,
            200
        );
        let other = token(&ns, "alice", Some("another-service"));
        let reply = Mcp::new(&frontend.url)
            .with_token(&other)
            .request("tools/list", json!({}), false)
            .await;
        assert_eq!(reply.status, 401, "{}", reply.body);
        assert!(token_reviews(&frontend).await > before);
    })
    .await;
}

#[tokio::test]
async fn one_caller_holding_its_listen_slots_does_not_lock_out_another() {
    with_temp_ns("fe-listen-fair", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let env = [
            ("MAX_SUBSCRIPTIONS", "4"),
            ("MAX_SUBSCRIPTIONS_PER_CALLER", "2"),
        ];
        let (_frontend, alice, bob) = two_callers(&client, &ns, &env).await;
        let args = json!({ "seconds": 600, "label": "held" });
        let alice_task = alice.start_task("slow_compute", args.clone()).await;
        let bob_task = bob.start_task("slow_compute", args).await;

        // Alice opens as many streams as she is let.
        let mut held = Vec::new();
        let refusal = loop {
            match alice
                .try_listen(&format!("a{}", held.len()), &[&alice_task])
                .await
            {
                Ok(stream) => held.push(stream),
                Err(reply) => break reply,
            }
            assert!(held.len() <= 4, "more streams than MAX_SUBSCRIPTIONS");
        };
        eprintln!("alice holds {} streams; then: {}", held.len(), refusal.body);
        let mut bobs = bob
            .try_listen("b0", &[&bob_task])
            .await
            .unwrap_or_else(|r| panic!("bob was locked out by alice's streams: {}", r.body));
        assert_eq!(
            bobs.next().await["method"],
            "notifications/subscriptions/acknowledged"
        );
        assert_eq!(held.len(), 2);
        assert_eq!(refusal.body["error"]["code"], -31002, "{}", refusal.body);
        let message = refusal.body["error"]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(
            message.contains("MAX_SUBSCRIPTIONS_PER_CALLER"),
            "{message}"
        );
    })
    .await;
}

#[tokio::test]
async fn one_callers_waiting_calls_do_not_hold_every_request_permit() {
    with_temp_ns("fe-permit-fair", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let env = [
            ("MAX_CONCURRENT_REQUESTS", "4"),
            ("MAX_REQUESTS_PER_CALLER", "2"),
            ("REQUEST_TIMEOUT_SECONDS", "60"),
        ];
        let (_frontend, alice, bob) = two_callers(&client, &ns, &env).await;
        // Four synchronous calls (no Tasks extension declared): each waits for its task.
        let settled: Arc<Mutex<Vec<Reply>>> = Arc::default();
        let calls: Vec<_> = (0..4)
            .map(|i| {
                let (alice, settled) = (alice.clone(), settled.clone());
                tokio::spawn(async move {
                    let args = json!({"name": "slow_compute",
                        "arguments": { "seconds": 600, "label": format!("sync-{i}") }});
                    let reply = alice.request("tools/call", args, false).await;
                    settled.lock().await.push(reply);
                })
            })
            .collect();
        // Until each call either created its task (and waits) or was refused.
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let begun = tokio::time::Instant::now();
        loop {
            let created = tasks
                .list(&ListParams::default())
                .await
                .expect("tasks")
                .items
                .len();
            let refused = settled.lock().await.len();
            if created + refused >= 4 {
                break;
            }
            assert!(begun.elapsed() < WAIT, "{created} tasks, {refused} answers");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let reply = bob.request("tools/list", json!({}), false).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        // Bob was answered while Alice's admitted calls still wait: none of hers had ended,
        // only refusals had come back.
        let settled = settled.lock().await.clone();
        eprintln!(
            "when bob was answered, alice's calls had these answers: {:?}",
            settled
                .iter()
                .map(|r| (r.status, r.body.clone()))
                .collect::<Vec<_>>()
        );
        assert_eq!(settled.len(), 2, "alice should have been refused twice");
        for refusal in &settled {
            assert_eq!(refusal.status, 429, "{}", refusal.body);
            let message = refusal.body["error"]["message"]
                .as_str()
                .unwrap_or_default();
            assert!(message.contains("MAX_REQUESTS_PER_CALLER"), "{message}");
        }
        for call in calls {
            call.abort();
        }
    })
    .await;
}
