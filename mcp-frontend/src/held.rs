//! Caps on what one source (client address) and one caller hold of a shared slot, so that
//! neither can take all of it: request permits (`MAX_CONCURRENT_REQUESTS`) and open
//! `subscriptions/listen` streams (`MAX_SUBSCRIPTIONS`). A refusal is a -31002 naming the
//! setting; the slot is given back when the request or stream ends.
//!
//! The source is the peer address of the connection, or with `TRUST_FORWARDED_FOR=true` the
//! last address in `X-Forwarded-For` (the client as the proxy in front of us saw it). IPv6
//! sources count per /64, the block one host is usually given.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::ConnectInfo;
use axum::http::{Extensions, HeaderMap};
use rmcp::model::ErrorData;
use serde_json::json;

use crate::error::QUOTA_EXCEEDED;

/// Who holds a slot: a source, or a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// A client address.
    Source,
    /// An authenticated caller.
    Caller,
}

/// Why a slot was refused: the holder already has `limit` of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// What the slot is, in the plural (`concurrent requests`).
    pub what: &'static str,
    /// Who was capped.
    pub holder: Holder,
    /// The setting that caps it (`MAX_REQUESTS_PER_CALLER`).
    pub setting: &'static str,
    /// The cap.
    pub limit: usize,
}

impl Refused {
    /// The sentence a client sees.
    pub fn message(&self) -> String {
        let holder = match self.holder {
            Holder::Source => "this client address",
            Holder::Caller => "this caller",
        };
        format!(
            "too many {}: {holder} already holds {} (MCP_FRONTEND_{}); retry once one of them ends",
            self.what, self.limit, self.setting
        )
    }

    /// The JSON-RPC error: -31002, with the limit and setting in `data`.
    pub fn error_data(&self) -> ErrorData {
        ErrorData::new(
            QUOTA_EXCEEDED,
            self.message(),
            Some(
                json!({ "limit": self.limit, "setting": format!("MCP_FRONTEND_{}", self.setting) }),
            ),
        )
    }
}

/// How many slots each holder (one source, or one caller) has of one kind.
#[derive(Debug)]
pub struct HeldSlots {
    what: &'static str,
    holder: Holder,
    setting: &'static str,
    limit: usize,
    held: Mutex<HashMap<String, usize>>,
}

impl HeldSlots {
    /// At most `limit` (0: no cap) slots `what` per `holder`, set by `setting`.
    pub fn new(
        what: &'static str,
        holder: Holder,
        setting: &'static str,
        limit: usize,
    ) -> Arc<Self> {
        Arc::new(Self {
            what,
            holder,
            setting,
            limit,
            held: Mutex::default(),
        })
    }

    /// One more slot for `key`, given back when the [`Hold`] drops; `Ok(None)` when there is no
    /// cap. The map holds only keys with slots, so it is bounded by the slots themselves.
    pub fn try_hold(self: &Arc<Self>, key: &str) -> Result<Option<Hold>, Refused> {
        if self.limit == 0 {
            return Ok(None);
        }
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(key.to_owned()).or_default();
        if *count >= self.limit {
            return Err(Refused {
                what: self.what,
                holder: self.holder,
                setting: self.setting,
                limit: self.limit,
            });
        }
        *count += 1;
        Ok(Some(Hold {
            slots: self.clone(),
            key: key.to_owned(),
        }))
    }

    /// Slots `key` holds now.
    pub fn held_by(&self, key: &str) -> usize {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.get(key).copied().unwrap_or(0)
    }
}

/// One slot of one holder; given back on drop.
#[derive(Debug)]
pub struct Hold {
    slots: Arc<HeldSlots>,
    key: String,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut held = self
            .slots
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// The per-source and per-caller caps of one kind of slot.
#[derive(Debug, Clone)]
pub struct SlotCaps {
    /// Per source.
    pub source: Arc<HeldSlots>,
    /// Per caller.
    pub caller: Arc<HeldSlots>,
}

impl SlotCaps {
    /// Request permits: `MAX_REQUESTS_PER_SOURCE` and `MAX_REQUESTS_PER_CALLER`.
    pub fn requests(per_source: usize, per_caller: usize) -> Self {
        let what = "concurrent requests";
        Self {
            source: HeldSlots::new(what, Holder::Source, "MAX_REQUESTS_PER_SOURCE", per_source),
            caller: HeldSlots::new(what, Holder::Caller, "MAX_REQUESTS_PER_CALLER", per_caller),
        }
    }

    /// `subscriptions/listen` streams: `MAX_SUBSCRIPTIONS_PER_SOURCE` and
    /// `MAX_SUBSCRIPTIONS_PER_CALLER`.
    pub fn subscriptions(per_source: usize, per_caller: usize) -> Self {
        let what = "open subscriptions/listen streams";
        Self {
            source: HeldSlots::new(
                what,
                Holder::Source,
                "MAX_SUBSCRIPTIONS_PER_SOURCE",
                per_source,
            ),
            caller: HeldSlots::new(
                what,
                Holder::Caller,
                "MAX_SUBSCRIPTIONS_PER_CALLER",
                per_caller,
            ),
        }
    }
}

/// The source of a request: its forwarded client address when `trust_forwarded_for` and the
/// request has one, else the connection's peer; `None` when neither is known (a request that
/// did not come over a socket, as in-process tests send).
pub fn source(
    headers: &HeaderMap,
    extensions: &Extensions,
    trust_forwarded_for: bool,
) -> Option<String> {
    let forwarded = || {
        headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .next_back()
            .and_then(|a| a.trim().parse::<IpAddr>().ok())
    };
    let peer = || {
        extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0.ip())
    };
    let ip = trust_forwarded_for
        .then(forwarded)
        .flatten()
        .or_else(peer)?;
    Some(match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            format!("{}/64", Ipv6Addr::from(prefix))
        }
        v4 => v4.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn a_holder_gets_up_to_its_limit_and_slots_come_back_on_drop() {
        let caps = SlotCaps::requests(0, 2);
        let a1 = caps.caller.try_hold("alice").unwrap();
        let a2 = caps.caller.try_hold("alice").unwrap();
        let refused = caps.caller.try_hold("alice").unwrap_err();
        assert_eq!(refused.limit, 2);
        assert!(
            refused
                .message()
                .contains("MCP_FRONTEND_MAX_REQUESTS_PER_CALLER"),
            "{}",
            refused.message()
        );
        assert!(
            caps.caller.try_hold("bob").unwrap().is_some(),
            "others are not capped"
        );
        drop(a1);
        assert_eq!(caps.caller.held_by("alice"), 1);
        let a3 = caps.caller.try_hold("alice").unwrap();
        drop((a2, a3));
        assert_eq!(caps.caller.held_by("alice"), 0);
        assert!(
            caps.caller.held.lock().unwrap().is_empty(),
            "no key kept without slots"
        );
        // A limit of 0 is no cap.
        assert!(caps.source.try_hold("10.0.0.1").unwrap().is_none());
    }

    #[test]
    fn the_source_is_the_peer_or_the_forwarded_client_when_trusted() {
        let mut headers = HeaderMap::new();
        let mut extensions = Extensions::new();
        assert_eq!(source(&headers, &extensions, true), None);
        extensions.insert(ConnectInfo(SocketAddr::from(([10, 1, 2, 3], 40000))));
        assert_eq!(source(&headers, &extensions, false).unwrap(), "10.1.2.3");
        headers.append(
            "x-forwarded-for",
            HeaderValue::from_static("6.6.6.6, 192.0.2.7"),
        );
        assert_eq!(source(&headers, &extensions, false).unwrap(), "10.1.2.3");
        assert_eq!(source(&headers, &extensions, true).unwrap(), "192.0.2.7");
        headers.insert("x-forwarded-for", HeaderValue::from_static("garbage"));
        assert_eq!(source(&headers, &extensions, true).unwrap(), "10.1.2.3");
        let v6: SocketAddr = "[2001:db8:1:2:3:4:5:6]:443".parse().unwrap();
        extensions.insert(ConnectInfo(v6));
        assert_eq!(
            source(&headers, &extensions, false).unwrap(),
            "2001:db8:1:2::/64"
        );
        let mapped: SocketAddr = "[::ffff:10.9.8.7]:1".parse().unwrap();
        extensions.insert(ConnectInfo(mapped));
        assert_eq!(source(&headers, &extensions, false).unwrap(), "10.9.8.7");
    }
}
