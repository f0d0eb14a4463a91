//! The Helm-installed stack for end-to-end tests: `helm upgrade --install` of the chart with our
//! `dev` images (or, under `make release-test`, of the pushed OCI chart with the images built
//! from the Dockerfile, pinned by digest) and the front end on a NodePort of the node's bridge
//! address (as `make up` does), and a guard that removes the release, its cluster-wide objects
//! included.

use kube::Client;
use rand::Rng;

use crate::operator::apply_example_tools;
use crate::release::Pushed;
use crate::{chart_dir, helm, kubectl, kubectl_ok};

/// The bridge address of the local node, where NodePorts answer (`hack/up.sh`'s NODE_IP).
pub const NODE_IP: &str = "10.244.0.1";

/// `--set` values of the stack the end-to-end, fault and load tests install: namespace-scoped,
/// 2 operator and 2 front-end replicas, and neither authentication nor authorization (the
/// conformance suite sends no token; every client is the same anonymous caller, allowed every
/// tool). With the chart's default auth instead, give clients
/// [`crate::callers::caller_token`].
pub const ANONYMOUS_TWO_REPLICAS: &[&str] = &[
    "rbac.scope=namespace",
    "operator.replicaCount=2",
    "frontend.replicaCount=2",
    "frontend.auth.mode=none",
    "frontend.auth.allowUnauthenticated=true",
    "frontend.authorization.mode=none",
];

/// `--set` values of the stack the end-to-end, fault and load tests install: namespace-scoped,
/// 2 operator and 2 front-end replicas, and the chart's default auth (TokenReview for the
/// release's own audience, [`crate::callers::audience`], RBAC on tools): clients send a token from
/// [`crate::callers::caller_token`].
pub const TWO_REPLICAS: &[&str] = &[
    "rbac.scope=namespace",
    "operator.replicaCount=2",
    "frontend.replicaCount=2",
];

/// The front end's `/mcp` on node port `port`.
pub fn mcp_url(port: u16) -> String {
    format!("http://{NODE_IP}:{port}/mcp")
}

/// Applies the example tools in `paths` (relative to the repository) to `ns` and waits until
/// the operator calls each Ready.
pub async fn apply_examples(client: &Client, ns: &str, paths: &[&str]) {
    for path in paths {
        apply_example_tools(client, ns, path).await;
    }
    wait_tools_ready(ns);
}

/// Waits (up to two minutes) until the operator calls every McpTool of `ns` Ready.
pub fn wait_tools_ready(ns: &str) {
    kubectl_ok(&[
        "wait",
        "-n",
        ns,
        "--for=condition=Ready",
        "mcptool",
        "--all",
        "--timeout=120s",
    ]);
}

/// Tag of our images in the stack: `MTO_IMAGE_TAG`, default `dev` (what `hack/build-images.sh`
/// builds without `IMAGE_TAG`); two checkouts testing on one cluster each set their own.
pub fn image_tag() -> String {
    std::env::var("MTO_IMAGE_TAG").unwrap_or_else(|_| "dev".to_owned())
}

/// Stdout then stderr of a finished command, for failure messages.
pub fn output_text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Installs the chart as `release` into `ns`, the front end Service a NodePort on a random free
/// port that accepts [`NODE_IP`] as `Host`, its admission policies bound to `ns` alone (also
/// with `rbac.scope: cluster`), without the CRDs (`crds.install=false`: tests share
/// the cluster's CRDs, which `ensure_crds` applies, and only one release may own them), and
/// `sets` (`--set` values, which win over these). The chart and images are the chart directory
/// with the `dev` images, or, under `make release-test`, the pushed OCI chart with every image
/// pinned by digest ([`Pushed`]). Waits (`--wait`, 5 min) until every Deployment is available.
/// Another test or `make up` may hold a port: a conflict is retried with another. Returns the
/// node port.
pub fn install(ns: &str, release: &str, sets: &[&str]) -> u16 {
    install_with(ns, release, sets, true)
}

/// [`install`] without waiting for the Deployments (a test of pods that never start).
pub fn install_unready(ns: &str, release: &str, sets: &[&str]) -> u16 {
    install_with(ns, release, sets, false)
}

fn install_with(ns: &str, release: &str, sets: &[&str], wait: bool) -> u16 {
    let (chart, version, images) = match Pushed::from_env() {
        Some(pushed) => {
            let images = pushed.image_sets(&pushed.operator_digest);
            (pushed.chart(), Some(pushed.chart_version), images)
        }
        None => {
            let tag = image_tag();
            let dir = chart_dir().to_str().expect("UTF-8 path").to_owned();
            let images = ["operator.image", "frontend.image", "operator.bridgeImage"]
                .map(|image| format!("{image}.tag={tag}"));
            (dir, None, images.to_vec())
        }
    };
    for _ in 0..10 {
        let port: u16 = rand::rng().random_range(30100..=32700);
        let mut values = vec!["crds.install=false".to_owned()];
        values.extend(images.iter().cloned());
        values.extend([
            "frontend.service.type=NodePort".to_owned(),
            format!("frontend.service.nodePort={port}"),
            format!("frontend.config.allowedHosts={{{NODE_IP}}}"),
            // A cluster-scoped release's admission policies apply to every namespace by
            // default, where they would refuse the Jobs of the other tests' operators.
            format!(
                "admissionPolicy.namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name={ns}"
            ),
        ]);
        values.extend(sets.iter().map(|set| (*set).to_owned()));
        let mut args = vec![
            "upgrade",
            "--install",
            release,
            chart.as_str(),
            "-n",
            ns,
            "--timeout",
            "5m",
        ];
        if wait {
            args.push("--wait");
        }
        if let Some(version) = &version {
            args.extend(["--version", version.as_str()]);
        }
        for value in &values {
            args.extend(["--set", value.as_str()]);
        }
        let out = helm(&args);
        if out.status.success() {
            return port;
        }
        let text = output_text(&out);
        if text.contains("already allocated") {
            eprintln!("node port {port} is taken, trying another");
            let _ = helm(&[
                "uninstall",
                release,
                "-n",
                ns,
                "--ignore-not-found",
                "--wait",
            ]);
            continue;
        }
        panic!("helm install of {chart} as {release} into {ns} failed:\n{text}");
    }
    panic!("no free node port found in 10 tries");
}

/// A release installed by a test; dropping it removes the release.
///
/// On a panic the namespaced objects stay for `with_temp_ns` to dump (pods, logs, Events) and
/// then delete with the namespace, but the cluster-wide ones (ClusterRoles, admission policies
/// and their bindings, whose names start with the release namespace) are deleted either way: no
/// namespace takes them along.
pub struct Release {
    /// The release namespace.
    pub ns: String,
    /// The release name.
    pub name: String,
}

impl Release {
    /// A guard for `name` in `ns` (create it before installing, so a failed install is
    /// cleaned up too).
    pub fn new(ns: &str, name: &str) -> Self {
        Self {
            ns: ns.to_owned(),
            name: name.to_owned(),
        }
    }

    /// Names (`kind/name`) of this release's ClusterRoles, ClusterRoleBindings and admission
    /// policies with their bindings.
    pub fn cluster_objects(&self) -> Vec<String> {
        let selector = format!("app.kubernetes.io/instance={}", self.name);
        let out = kubectl(&[
            "get",
            "clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings",
            "-l",
            &selector,
            "-o",
            "name",
        ]);
        let prefix = format!("/{}-", self.ns);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(&prefix))
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        if std::env::var_os("MTO_KEEP_NS").is_some() {
            return;
        }
        if !std::thread::panicking() {
            let _ = helm(&[
                "uninstall",
                &self.name,
                "-n",
                &self.ns,
                "--ignore-not-found",
            ]);
        }
        for object in self.cluster_objects() {
            let _ = kubectl(&["delete", &object, "--ignore-not-found"]);
        }
    }
}

/// A TCP relay from a free port on 127.0.0.1 to `target`, for clients that must talk to a
/// localhost URL (the conformance suite's DNS-rebinding scenario) while the requests still go
/// through the Service. Each connection is copied both ways until either side closes; the
/// relay stops accepting when dropped.
pub struct Relay {
    /// The local port.
    pub port: u16,
    accept: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// Starts relaying 127.0.0.1:<port> to `target` (`host:port`).
    pub async fn start(target: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the relay on 127.0.0.1");
        let port = listener.local_addr().expect("relay address").port();
        let target = target.to_owned();
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let target = target.clone();
                tokio::spawn(async move {
                    match tokio::net::TcpStream::connect(&target).await {
                        Ok(mut outbound) => {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                        Err(e) => eprintln!("relay cannot reach {target}: {e}"),
                    }
                });
            }
        });
        Self { port, accept }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
    }
}
