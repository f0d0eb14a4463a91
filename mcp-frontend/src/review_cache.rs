//! A bounded, expiring cache of API-server review answers (TokenReview, SubjectAccessReview),
//! shared by [`crate::token_review`] and [`crate::authz`].
//!
//! Keys are SHA-256 digests, so the cache never holds a bearer token or an identity in the
//! clear. A key has at most one review in flight: concurrent askers wait for its answer
//! (moka's `try_get_with`). Granted answers live [`GRANTED_TTL`], refusals [`REFUSED_TTL`];
//! a failed review is not cached, so the next request asks again.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::Expiry;
use moka::future::Cache;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use sha2::{Digest, Sha256};

/// How long a granted answer (a valid token, an allowed call) is reused.
pub const GRANTED_TTL: Duration = Duration::from_secs(30);
/// How long a refusal (an unknown token, a denied call) is reused.
pub const REFUSED_TTL: Duration = Duration::from_secs(5);
/// Answers kept at most per cache; the least useful are evicted past it.
pub const CAPACITY: u64 = 10_000;

/// SHA-256 of the reviewed input: the only form in which it is kept.
pub type Key = [u8; 32];

/// The digest of `parts`, each length-prefixed so that no two different lists collide by
/// concatenation.
pub fn key<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Key {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// A review answer: whether it grants, which decides how long it is kept.
pub trait Answer: Clone + Send + Sync + 'static {
    /// Whether the answer grants (kept [`GRANTED_TTL`]) or refuses (kept [`REFUSED_TTL`]).
    fn granted(&self) -> bool;
}

impl Answer for bool {
    fn granted(&self) -> bool {
        *self
    }
}

impl<T: Send + Sync + 'static> Answer for Option<Arc<T>> {
    fn granted(&self) -> bool {
        self.is_some()
    }
}

/// Per-answer lifetimes: granted and refused answers expire at different times.
#[derive(Debug, Clone, Copy)]
pub struct Ttls {
    /// Lifetime of a granted answer.
    pub granted: Duration,
    /// Lifetime of a refusal.
    pub refused: Duration,
}

impl Default for Ttls {
    fn default() -> Self {
        Self {
            granted: GRANTED_TTL,
            refused: REFUSED_TTL,
        }
    }
}

impl<V: Answer> Expiry<Key, V> for Ttls {
    fn expire_after_create(&self, _key: &Key, value: &V, _created_at: Instant) -> Option<Duration> {
        Some(if value.granted() {
            self.granted
        } else {
            self.refused
        })
    }
}

/// Labels of one review sent to the API server.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReviewLabels {
    /// `token` (TokenReview) or `access` (SubjectAccessReview).
    pub kind: &'static str,
    /// `granted`, `refused` or `failed` (the API call itself failed).
    pub outcome: &'static str,
}

/// Reviews actually sent to the API server (cache misses), by kind and outcome: what the
/// caches save is the request count minus these.
#[derive(Clone, Debug, Default)]
pub struct ReviewMetrics(Family<ReviewLabels, Counter>);

impl ReviewMetrics {
    /// Registers the counter as `mcp_frontend_reviews_total`.
    pub fn register(&self, registry: &mut Registry) {
        registry.sub_registry_with_prefix("mcp_frontend").register(
            "reviews",
            "TokenReviews and SubjectAccessReviews sent to the Kubernetes API server, by kind and outcome",
            self.0.clone(),
        );
    }

    fn count(&self, kind: &'static str, outcome: &'static str) {
        self.0.get_or_create(&ReviewLabels { kind, outcome }).inc();
    }
}

/// Review answers by digest.
pub struct ReviewCache<V> {
    cache: Cache<Key, V>,
    counted: Option<(&'static str, ReviewMetrics)>,
}

impl<V: Answer> ReviewCache<V> {
    /// A cache of at most `capacity` answers living `ttls`.
    pub fn new(capacity: u64, ttls: Ttls) -> Self {
        Self {
            cache: Cache::builder()
                .max_capacity(capacity)
                .expire_after(ttls)
                .build(),
            counted: None,
        }
    }

    /// The same cache counting each review it sends in `metrics` as `kind`.
    pub fn counted(mut self, kind: &'static str, metrics: ReviewMetrics) -> Self {
        self.counted = Some((kind, metrics));
        self
    }

    /// The cached answer for `key`, or the one `review` gives (which is then cached). Callers
    /// asking for the same key meanwhile wait for this review instead of starting their own.
    pub async fn get_or_review<E>(
        &self,
        key: Key,
        review: impl Future<Output = Result<V, E>>,
    ) -> Result<V, Arc<E>>
    where
        E: Send + Sync + 'static,
    {
        let counted = async {
            let answer = review.await;
            if let Some((kind, metrics)) = &self.counted {
                let outcome = match &answer {
                    Ok(v) if v.granted() => "granted",
                    Ok(_) => "refused",
                    Err(_) => "failed",
                };
                metrics.count(kind, outcome);
            }
            answer
        };
        self.cache.try_get_with(key, counted).await
    }
}

impl<V: Answer> Default for ReviewCache<V> {
    fn default() -> Self {
        Self::new(CAPACITY, Ttls::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_expire_sooner_than_grants() {
        let ttls = Ttls::default();
        let now = Instant::now();
        let key = key([b"t".as_slice()]);
        assert_eq!(
            Expiry::<Key, bool>::expire_after_create(&ttls, &key, &true, now),
            Some(GRANTED_TTL)
        );
        assert_eq!(
            Expiry::<Key, bool>::expire_after_create(&ttls, &key, &false, now),
            Some(REFUSED_TTL)
        );
    }

    #[test]
    fn keys_are_digests_that_keep_parts_apart() {
        assert_ne!(
            key([b"ab".as_slice(), b"c".as_slice()]),
            key([b"a".as_slice(), b"bc".as_slice()])
        );
        assert_eq!(key([b"x".as_slice()]), key([b"x".as_slice()]));
    }
}
