//! Helpers shared by every integration and end-to-end test: a client for the local cluster, a
//! fresh namespace per test (dumped on failure, deleted afterwards), kubectl, and waiting.
//!
//! The cluster is the one `make cluster-up` starts; `make test` exports `KUBECONFIG` for it.

use std::{future::Future, panic::AssertUnwindSafe, process::Output, time::Duration};

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Event, Namespace, Pod};
use kube::{
    Api, Client, Config, Resource,
    api::{DeleteParams, ListParams, LogParams, PostParams},
    config::KubeConfigOptions,
    runtime::wait::{Condition, await_condition},
    runtime::{WatchStreamExt, watcher},
};
use rand::Rng;
use serde::{Deserialize, de::DeserializeOwned};
use tokio::task::JoinHandle;

/// Label put on every namespace a test creates, so leftovers can be deleted in bulk.
pub const TEST_NS_LABEL: &str = "mcptasks.io/test";

/// A client for the local cluster, from `KUBECONFIG`.
///
/// Panics with a hint when no kubeconfig is set: integration tests only make sense against the
/// cluster `make cluster-up` starts.
pub async fn client() -> Client {
    let path = std::env::var("KUBECONFIG")
        .expect("KUBECONFIG is not set: run the integration tests through `make test`");
    let kubeconfig = kube::config::Kubeconfig::read_from(&path)
        .unwrap_or_else(|e| panic!("cannot read kubeconfig {path}: {e}"));
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig is valid");
    Client::try_from(config).expect("client builds from kubeconfig")
}

/// Runs `test` in a fresh namespace named `<prefix>-<random>`.
///
/// On a panic the namespace's pods, their logs and its Events are printed before the panic is
/// resumed; the namespace is deleted either way (set `MTO_KEEP_NS=1` to keep it).
pub async fn with_temp_ns<F, Fut>(prefix: &str, test: F)
where
    F: FnOnce(Client, String) -> Fut,
    Fut: Future<Output = ()>,
{
    let client = client().await;
    let suffix: String = (0..6)
        .map(|_| char::from(b'a' + rand::rng().random_range(0..26u8)))
        .collect();
    let name = format!("{prefix}-{suffix}");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.clone());
    ns.metadata.labels = Some([(TEST_NS_LABEL.to_string(), prefix.to_string())].into());
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap_or_else(|e| panic!("cannot create namespace {name}: {e}"));
    wait_for_default_service_account(&client, &name).await;

    let outcome = AssertUnwindSafe(test(client.clone(), name.clone()))
        .catch_unwind()
        .await;
    if outcome.is_err() {
        dump_namespace(&client, &name).await;
    }
    if std::env::var_os("MTO_KEEP_NS").is_none() {
        let _ = namespaces.delete(&name, &DeleteParams::background()).await;
    }
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Pods are refused until the service-account controller has made `default` in a new namespace.
async fn wait_for_default_service_account(client: &Client, ns: &str) {
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), ns);
    for _ in 0..300 {
        if accounts.get_opt("default").await.ok().flatten().is_some() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("namespace {ns} got no default ServiceAccount in 30 s");
}

/// Prints a namespace's pods (with logs) and Events, for a failing test's output.
pub async fn dump_namespace(client: &Client, ns: &str) {
    eprintln!("==== namespace {ns} after a failure ====");
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    if let Ok(list) = pods.list(&ListParams::default()).await {
        for pod in list {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let status = serde_json::to_string(&pod.status).unwrap_or_default();
            eprintln!("---- pod {name}: {status}");
            if let Ok(logs) = pods.logs(&name, &LogParams::default()).await {
                eprintln!("{logs}");
            }
        }
    }
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    if let Ok(list) = events.list(&ListParams::default()).await {
        for e in list {
            eprintln!(
                "event {} {}/{}: {} {}",
                e.type_.unwrap_or_default(),
                e.involved_object.kind.unwrap_or_default(),
                e.involved_object.name.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default()
            );
        }
    }
}

/// Waits until `condition` holds for the named object, or panics after `timeout`.
pub async fn wait_for<K, C>(api: &Api<K>, name: &str, condition: C, timeout: Duration) -> K
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    C: Condition<K>,
{
    let waited = tokio::time::timeout(timeout, await_condition(api.clone(), name, condition)).await;
    match waited {
        Ok(Ok(Some(obj))) => obj,
        Ok(Ok(None)) => panic!("{name} was deleted while waiting"),
        Ok(Err(e)) => panic!("watching {name} failed: {e}"),
        Err(_) => {
            let last = api.get_opt(name).await.ok().flatten();
            panic!("{name} did not reach the condition in {timeout:?}; last seen: {last:?}")
        }
    }
}

/// Spawns a watch on `api` (it resumes by itself after API server outages) that hands every
/// object it reports to `apply`; aborting the handle ends it.
pub fn follow<K>(api: Api<K>, mut apply: impl FnMut(K) + Send + 'static) -> JoinHandle<()>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Default + std::hash::Hash + Eq + Clone,
{
    tokio::spawn(async move {
        let stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            if let Ok(object) = event {
                apply(object);
            }
        }
    })
}

/// Runs `kubectl` (the one `make` put on `PATH`) against the test cluster.
pub fn kubectl(args: &[&str]) -> Output {
    std::process::Command::new("kubectl")
        .args(args)
        .output()
        .expect("kubectl runs (make puts the cluster's kubectl on PATH)")
}

/// Runs kubectl and panics, with its stdout and stderr, when it fails; returns its stdout.
pub fn kubectl_ok(args: &[&str]) -> String {
    let out = kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Field manager of every object the tests server-side apply.
pub const TEST_FIELD_MANAGER: &str = "mcp-task-operator-tests";

/// Installs the committed CRDs (every file in `crds/yaml/`) by server-side apply and waits until
/// each is Established, so tests run against exactly what `make generate` produced.
///
/// Safe to call from every test: applying an unchanged CRD is a no-op.
pub async fn ensure_crds(client: &Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Patch, PatchParams};
    use kube::runtime::wait::conditions::is_crd_established;

    let dir = repo_dir().join("crds/yaml");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no CRD YAML in {}: run hack/generate.sh",
        dir.display()
    );

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for path in files {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        for document in serde_yaml::Deserializer::from_str(&text) {
            let crd = CustomResourceDefinition::deserialize(document)
                .unwrap_or_else(|e| panic!("{} holds an invalid CRD: {e}", path.display()));
            let name = crd.metadata.name.clone().expect("CRD has a name");
            crds.patch(
                &name,
                &PatchParams::apply(TEST_FIELD_MANAGER).force(),
                &Patch::Apply(&crd),
            )
            .await
            .unwrap_or_else(|e| panic!("cannot apply CRD {name}: {e}"));
            wait_for(&crds, &name, is_crd_established(), Duration::from_secs(30)).await;
        }
    }
}

/// The Kubernetes version `helm template` renders for (the local cluster's, `hack/versions.sh`):
/// without it Helm assumes v1.20, which the chart's `kubeVersion` refuses.
pub const KUBE_VERSION: &str = "1.34.4";

/// Runs `helm` (the one `make` put on `PATH`, next to kubectl) against the test cluster.
pub fn helm(args: &[&str]) -> Output {
    std::process::Command::new("helm")
        .args(args)
        .output()
        .expect("helm runs (make puts the cluster's helm on PATH)")
}

/// The chart's directory in this checkout.
pub fn chart_dir() -> std::path::PathBuf {
    repo_dir().join("charts/mcp-task-operator")
}

/// The root of this checkout, found at run time: `cargo test` and `cargo run` set
/// `CARGO_MANIFEST_DIR` to the member they run (one level below the root); a binary started
/// otherwise (`mto-bench` from `hack/bench.sh`) looks up from its working directory. Never the
/// compile-time value: a build cache shared by two checkouts (CI's clone and a work tree) hands
/// one of them the harness compiled in the other, the other's path baked in by `env!`.
pub fn repo_dir() -> std::path::PathBuf {
    let is_root = |dir: &std::path::Path| dir.join("hack/versions.sh").is_file();
    let member = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(|dir| std::path::Path::new(&dir).join(".."))
        .filter(|root| is_root(root));
    member
        .or_else(|| {
            let cwd = std::env::current_dir().ok()?;
            cwd.ancestors()
                .find(|d| is_root(d))
                .map(std::path::Path::to_path_buf)
        })
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
}

/// Runs the script at `path` (under [`repo_dir`]) with `args`; panics with its output when it
/// fails.
pub fn run_script(path: &str, args: &[&str]) {
    let script = repo_dir().join(path);
    let out = std::process::Command::new(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{path} {args:?} failed:\n{}",
        stack::output_text(&out)
    );
}

pub mod access;
pub mod callers;
pub mod chart_access;
pub mod clients;
pub mod conformance;
pub mod faults;
pub mod fixture_tools;
pub mod frontend;
pub mod jaeger;
pub mod kueue;
pub mod kwok;
pub mod lag_proxy;
pub mod mcp_client;
pub mod mcp_servers;
pub mod operator;
pub mod release;
pub mod stack;
pub mod status_writer;
pub mod token_relay;
pub mod traffic;
pub mod warm_pools;
