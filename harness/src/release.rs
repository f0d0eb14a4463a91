//! The release `make release-test` pushed (hack/release-test.sh): the images built from the
//! repository's Dockerfile and the chart packaged as an OCI artifact, in the local registry.
//! The script names them in `MTO_RELEASE_*` variables; with those set, [`crate::stack::install`]
//! installs `oci://REGISTRY/charts/mcp-task-operator` with every image pinned by digest instead
//! of the chart directory with the `dev` images, so the end-to-end suite runs on what users
//! install.

/// The pushed release, from the `MTO_RELEASE_*` variables hack/release-test.sh sets.
#[derive(Clone, Debug)]
pub struct Pushed {
    /// The registry, e.g. `localhost:5000`.
    pub registry: String,
    /// The chart's version (`Chart.yaml`'s `version`).
    pub chart_version: String,
    /// `sha256:…` of the operator image.
    pub operator_digest: String,
    /// `sha256:…` of the front end image.
    pub frontend_digest: String,
    /// `sha256:…` of the bridge image.
    pub bridge_digest: String,
}

/// A variable hack/release-test.sh sets, once `MTO_RELEASE_REGISTRY` says it ran.
fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("MTO_RELEASE_REGISTRY is set but {name} is not: run `make release-test` (hack/release-test.sh)")
    })
}

impl Pushed {
    /// The pushed release, or `None` when `MTO_RELEASE_REGISTRY` is unset (the tests then
    /// install the chart directory with the `dev` images).
    pub fn from_env() -> Option<Self> {
        let registry = std::env::var("MTO_RELEASE_REGISTRY").ok()?;
        Some(Self {
            registry,
            chart_version: var("MTO_RELEASE_CHART_VERSION"),
            operator_digest: var("MTO_RELEASE_OPERATOR_DIGEST"),
            frontend_digest: var("MTO_RELEASE_FRONTEND_DIGEST"),
            bridge_digest: var("MTO_RELEASE_BRIDGE_DIGEST"),
        })
    }

    /// The pushed release; panics, saying how to push it, when the variables are unset.
    pub fn required() -> Self {
        Self::from_env().unwrap_or_else(|| {
            panic!("MTO_RELEASE_REGISTRY is not set: run `make release-test` (hack/release-test.sh), which builds and pushes the release first")
        })
    }

    /// `oci://REGISTRY/charts/mcp-task-operator`, for `helm install` with `--version`.
    pub fn chart(&self) -> String {
        format!("oci://{}/charts/mcp-task-operator", self.registry)
    }

    /// `REGISTRY/name@digest`, as the chart renders an image and the kubelet reports its
    /// `imageID`.
    pub fn pinned(&self, name: &str, digest: &str) -> String {
        format!("{}/{name}@{digest}", self.registry)
    }

    /// `--set` values that pin the three images to the pushed digests, the operator's to
    /// `operator_digest`.
    pub fn image_sets(&self, operator_digest: &str) -> Vec<String> {
        let reg = &self.registry;
        vec![
            format!("operator.image.repository={reg}/mcp-task-operator"),
            format!("operator.image.digest={operator_digest}"),
            format!("frontend.image.repository={reg}/mcp-task-frontend"),
            format!("frontend.image.digest={}", self.frontend_digest),
            format!("operator.bridgeImage.repository={reg}/mcp-bridge"),
            format!("operator.bridgeImage.digest={}", self.bridge_digest),
        ]
    }
}
