//! Follower tests: the pod a follower looks at each time its stream ends comes from the
//! operator's pod cache, and a pod the cache lacks is confirmed by one request.

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use serde_json::json;

use super::Verdict;
use super::tests::{Followed, follow_with, stamped};
use crate::lock;

/// A cache holding the pod `p` (UID `uid`) of namespace `tools`, its container `tool` in
/// `state` (`running` or `terminated`).
fn cache_with(uid: &str, state: &str) -> Store<Pod> {
    let (store, mut writer) = reflector::store::<Pod>();
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "tools", "uid": uid},
        "status": {"containerStatuses": [{"name": "tool", "image": "i", "imageID": "",
            "ready": false, "restartCount": 0, "state": {state: {}}}]}}))
    .expect("pod");
    writer.apply_watcher_event(&watcher::Event::Apply(pod));
    store
}

/// Follows pod `p`, whose log reads `hello\nworld` every time, with the pod cache `cache`.
async fn follow_cached(cache: Store<Pod>) -> Followed {
    follow_with(vec![(200, stamped("hello\nworld"))], None, Some(cache)).await
}

#[tokio::test(start_paused = true)]
async fn a_follower_reads_its_pod_from_the_cache() {
    let run = follow_cached(cache_with("pod-1", "terminated")).await;
    assert_eq!(lock(&run.state).verdict, Verdict::Complete);
    assert_eq!(run.log_reads, 2, "the stream, then one read that agrees");
    assert_eq!(run.pod_lists, 0, "the pod came from the cache each time");
}

#[tokio::test(start_paused = true)]
async fn a_pod_the_cache_lacks_is_confirmed_by_a_list() {
    // Another pod of the same name (a new UID) in the cache is not this follower's pod.
    let run = follow_cached(cache_with("pod-0", "terminated")).await;
    assert_eq!(lock(&run.state).verdict, Verdict::Complete);
    assert_eq!(run.pod_lists, 2, "one list per ended stream");
    let (empty, _writer) = reflector::store::<Pod>();
    let run = follow_cached(empty).await;
    assert_eq!(lock(&run.state).verdict, Verdict::Complete);
    assert_eq!(run.pod_lists, 2, "the mock's pod exists: the cache lagged");
}
