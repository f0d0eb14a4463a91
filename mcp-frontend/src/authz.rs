//! Authorization with Kubernetes RBAC: may this caller call that tool?
//!
//! In `rbac` mode every tool is checked with a SubjectAccessReview for verb [`VERB`] on
//! `mcptools.mcptasks.io` with the `McpTool`'s object name in the served namespace, for the
//! caller's [`Identity`] (user, uid, groups, extra). Grant it with a Role or ClusterRole such
//! as the chart's `<release>-caller` (optionally narrowed by `resourceNames`). `tools/list`
//! shows only the tools a caller may call, and a refused `tools/call` is answered exactly as
//! an unknown tool, so a caller cannot tell a forbidden tool from a missing one. Answers are
//! cached by a digest of (identity, tool) in a [`ReviewCache`].

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};
use mcp_task_operator_crds::GROUP;

use crate::auth::Identity;
use crate::error::{Error, Result};
use crate::review_cache::{self, ReviewCache};
use crate::state::AppState;
use crate::tools::{CatalogSnapshot, ToolEntry};

/// The RBAC verb that lets a caller list and call a tool.
pub const VERB: &str = "call";
/// The RBAC resource of tools (`McpTool`s) in group [`GROUP`].
pub const RESOURCE: &str = "mcptools";
/// Reviews run at once for one `tools/list`; the rest wait (a cached answer needs none).
const LIST_CONCURRENCY: usize = 8;

/// Why access could not be checked (not: why it was refused).
#[derive(Debug, thiserror::Error)]
pub enum AuthzError {
    /// The SubjectAccessReview call failed (shared by every request that waited for it).
    #[error("failed to create SubjectAccessReview")]
    Review(#[source] Arc<kube::Error>),
    /// `rbac` mode is configured but the front end was built without a reviewer.
    #[error("authorization is configured but no access reviewer is set")]
    Unavailable,
}

/// How tool calls are authorized.
#[derive(Clone)]
pub enum Authz {
    /// Every authenticated caller may list and call every tool.
    None,
    /// RBAC decides, through SubjectAccessReviews.
    Rbac(Arc<AccessReviewer>),
    /// `rbac` is configured but no reviewer was set: every check fails (closed).
    Unavailable,
}

impl Authz {
    /// Whether `identity` may call the tool `entry`.
    pub async fn may_call(
        &self,
        identity: &Identity,
        entry: &ToolEntry,
    ) -> Result<bool, AuthzError> {
        match self {
            Self::None => Ok(true),
            Self::Rbac(reviewer) => reviewer.may_call(identity, &entry.object_name).await,
            Self::Unavailable => Err(AuthzError::Unavailable),
        }
    }

    /// The subset of `entries` that `identity` may call, in their order.
    pub async fn callable(
        &self,
        identity: &Identity,
        entries: Vec<Arc<ToolEntry>>,
    ) -> Result<Vec<Arc<ToolEntry>>, AuthzError> {
        let answers: Vec<_> = futures::stream::iter(entries)
            .map(move |entry: Arc<ToolEntry>| async move {
                let allowed = self.may_call(identity, &entry).await;
                (entry, allowed)
            })
            .buffered(LIST_CONCURRENCY)
            .collect()
            .await;
        let mut out = Vec::with_capacity(answers.len());
        for (entry, allowed) in answers {
            if allowed? {
                out.push(entry);
            }
        }
        Ok(out)
    }
}

/// The authorization step of `tools/call`, before any other check of the call: a tool the
/// caller may not call is answered exactly as a tool that does not exist (-32602 "Unknown
/// tool"), before the capability or argument checks could tell them apart. A name that is not
/// served is left to [`crate::call::check_call`], which answers the same.
pub async fn authorize_call(
    state: &AppState,
    identity: &Identity,
    tools: &CatalogSnapshot,
    name: &str,
) -> Result<()> {
    let Some(entry) = tools.get(name) else {
        return Ok(());
    };
    if state.authz.may_call(identity, &entry).await? {
        Ok(())
    } else {
        Err(Error::UnknownTool {
            name: name.to_owned(),
        })
    }
}

/// Asks the API server, through SubjectAccessReviews, whether callers may call tools in one
/// namespace; answers are cached.
pub struct AccessReviewer {
    api: Api<SubjectAccessReview>,
    namespace: String,
    cache: ReviewCache<bool>,
}

impl AccessReviewer {
    /// A reviewer for tools in `namespace`, caching answers in `cache`.
    pub fn new(client: Client, namespace: &str, cache: ReviewCache<bool>) -> Self {
        Self {
            api: Api::all(client),
            namespace: namespace.to_owned(),
            cache,
        }
    }

    /// Whether `identity` may [`VERB`] the `McpTool` named `tool` (its object name).
    pub async fn may_call(&self, identity: &Identity, tool: &str) -> Result<bool, AuthzError> {
        self.cache
            .get_or_review(cache_key(identity, tool), self.review(identity, tool))
            .await
            .map_err(AuthzError::Review)
    }

    async fn review(&self, identity: &Identity, tool: &str) -> Result<bool, kube::Error> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(identity.user.clone()),
                uid: identity.uid.clone(),
                groups: Some(identity.groups.clone()),
                extra: (!identity.extra.is_empty()).then(|| identity.extra.clone()),
                resource_attributes: Some(ResourceAttributes {
                    namespace: Some(self.namespace.clone()),
                    verb: Some(VERB.to_owned()),
                    group: Some(GROUP.to_owned()),
                    resource: Some(RESOURCE.to_owned()),
                    name: Some(tool.to_owned()),
                    ..ResourceAttributes::default()
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let answer = self.api.create(&PostParams::default(), &review).await?;
        // `denied` can only make `allowed` false; an answer without status refuses.
        Ok(answer
            .status
            .is_some_and(|s| s.allowed && s.denied != Some(true)))
    }
}

/// The cache key: a digest over everything the review depends on (the namespace is fixed per
/// reviewer). Each part is length-prefixed by [`review_cache::key`], so fields cannot run
/// into each other.
fn cache_key(identity: &Identity, tool: &str) -> review_cache::Key {
    let mut parts: Vec<&[u8]> = vec![
        tool.as_bytes(),
        identity.user.as_bytes(),
        identity.uid.as_deref().unwrap_or("").as_bytes(),
    ];
    // Counts keep "groups [a], extra {}" apart from "groups [], extra {a: []}".
    let groups = identity.groups.len().to_be_bytes();
    parts.push(&groups);
    parts.extend(identity.groups.iter().map(|g| g.as_bytes()));
    let extras = identity.extra.len().to_be_bytes();
    parts.push(&extras);
    let counts: Vec<[u8; 8]> = identity
        .extra
        .values()
        .map(|v| v.len().to_be_bytes())
        .collect();
    for ((name, values), count) in identity.extra.iter().zip(&counts) {
        parts.push(name.as_bytes());
        parts.push(count);
        parts.extend(values.iter().map(|v| v.as_bytes()));
    }
    review_cache::key(parts)
}

#[cfg(test)]
mod tests;
