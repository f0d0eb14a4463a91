//! What bearer tokens cost the Kubernetes API server: the front end binary in `tokenreview`
//! mode against the real API server, counting the TokenReviews it really sends
//! (`mcp_frontend_reviews_total`). Concurrent requests with one token share one review, a
//! refused token is not reviewed again while its refusal is cached, and each new token costs
//! one review (issue 12, finding 5: before, every request of an uncached token cost a review,
//! so a burst of one caller, or of garbage tokens, became a burst of TokenReviews). The unknown
//! tokens here have the form of a JWT: others cost no review at all (`frontend_fairness.rs`).

use std::time::Instant;

use mcp_task_operator_harness::callers::{random_jwt, service_account, token};
use mcp_task_operator_harness::fixture_tools::serve_fixtures;
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

const AUDIENCE: &str = "mcp-task-operator-review-test";
/// How long the front end keeps a refusal (`review_cache::REFUSED_TTL`).
const REFUSED_TTL_SECS: u64 = 5;

async fn reviews(frontend: &Frontend, outcome: &str) -> u64 {
    let series = format!("mcp_frontend_reviews_total{{kind=\"token\",outcome=\"{outcome}\"}}");
    frontend.counter(&series).await
}

#[tokio::test]
async fn tokens_cost_one_review_each_however_many_requests_carry_them() {
    with_temp_ns("fe-reviews", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        service_account(&client, &ns, "agent").await;
        let frontend = Frontend::start(
            &ns,
            &[("AUTH_MODE", "tokenreview"), ("TOKEN_AUDIENCES", AUDIENCE)],
        )
        .await;

        // 40 requests at once with one valid token: one review, shared.
        let agent = Mcp::new(&frontend.url).with_token(&token(&ns, "agent", Some(AUDIENCE)));
        let before = reviews(&frontend, "granted").await;
        let replies = futures::future::join_all(
            (0..40).map(|_| agent.request("tools/list", json!({}), true)),
        )
        .await;
        assert!(
            replies.iter().all(|r| r.status == 200),
            "{:?}",
            replies.iter().map(|r| r.status).collect::<Vec<_>>()
        );
        let granted = reviews(&frontend, "granted").await - before;
        eprintln!("40 concurrent requests with one valid token: {granted} TokenReview(s)");
        assert_eq!(granted, 1, "concurrent requests must share one review");

        // 40 requests in a row with one unknown token: one review per refusal lifetime.
        let stranger = Mcp::new(&frontend.url).with_token(&random_jwt());
        let before = reviews(&frontend, "refused").await;
        let started = Instant::now();
        for _ in 0..40 {
            let reply = stranger.request("tools/list", json!({}), true).await;
            assert_eq!(reply.status, 401, "{}", reply.body);
        }
        let refused = reviews(&frontend, "refused").await - before;
        let at_most = 1 + started.elapsed().as_secs() / REFUSED_TTL_SECS;
        eprintln!(
            "40 sequential requests with one unknown token in {:?}: {refused} TokenReview(s)",
            started.elapsed()
        );
        assert!(
            (1..=at_most).contains(&refused),
            "{refused} reviews for one unknown token; at most {at_most} expected"
        );

        // Each distinct unknown token costs its own review, once.
        let before = reviews(&frontend, "refused").await;
        for _ in 0..10 {
            let reply = Mcp::new(&frontend.url)
                .with_token(&random_jwt())
                .request("tools/list", json!({}), true)
                .await;
            assert_eq!(reply.status, 401, "{}", reply.body);
        }
        assert_eq!(reviews(&frontend, "refused").await - before, 10);
    })
    .await;
}
