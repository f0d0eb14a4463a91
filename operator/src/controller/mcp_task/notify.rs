//! What a log follower does with news: ask for a reconcile (throttled, trailing edge, so the
//! last change is never lost; at once for the tool's result message and the verdict on a
//! stopped container's output, which come once and which the terminal status waits on) and
//! report tool-output warnings (capped per task, so a tool that
//! prints a million malformed lines cannot flood the Events API or the operator's logs).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use kube::ResourceExt;
use kube::runtime::events::{Event, EventType};
use mcp_task_operator_crds::McpTask;
use tokio::time::Instant;

use super::follow::{News, Notify};
use crate::context::{Context, TaskRef};
use crate::contract::message::shorten;
use crate::lock;

/// Warning Events (and log lines) per task about its tool's output; later ones are counted only.
/// Counted over the whole log: a follower that reads it again (after a failover, say) reports
/// only the warnings past the ones already reported (see `follow.rs`).
pub const MAX_WARNING_EVENTS: u64 = 10;

/// Sends reconcile requests for one task at most once per interval, trailing edge included.
#[derive(Debug)]
pub struct Throttle {
    interval: Duration,
    state: Mutex<ThrottleState>,
}

#[derive(Debug, Default)]
struct ThrottleState {
    last_sent: Option<Instant>,
    pending: bool,
}

impl Throttle {
    /// A throttle letting one request through per `interval`.
    pub fn new(interval: Duration) -> Arc<Self> {
        Arc::new(Self {
            interval,
            state: Mutex::new(ThrottleState::default()),
        })
    }

    /// Calls `send` now if the interval has passed, else once when it does (if not already
    /// scheduled).
    pub fn fire(self: &Arc<Self>, send: impl FnOnce() + Send + 'static) {
        let now = Instant::now();
        let wait = {
            let mut state = lock(&self.state);
            let due = state.last_sent.map_or(now, |t| t + self.interval);
            if due <= now {
                state.last_sent = Some(now);
                None
            } else if state.pending {
                return;
            } else {
                state.pending = true;
                Some(due - now)
            }
        };
        match wait {
            None => send(),
            Some(wait) => {
                let this = Arc::clone(self);
                tokio::spawn(async move {
                    tokio::time::sleep(wait).await;
                    {
                        let mut state = lock(&this.state);
                        state.pending = false;
                        state.last_sent = Some(Instant::now());
                    }
                    send();
                });
            }
        }
    }
}

/// The follower callback for `task`: throttled reconcile requests and capped warnings.
pub fn notifier(ctx: &Context, task: &McpTask) -> Notify {
    let trigger: UnboundedSender<TaskRef> = ctx.trigger.clone();
    let object = TaskRef::new(&task.name_any()).within(&task.namespace().unwrap_or_default());
    let metrics = Arc::clone(&ctx.metrics);
    let events = ctx.events.clone();
    let reference = kube::Resource::object_ref(task, &());
    let throttle = Throttle::new(ctx.config.status_interval);
    Arc::new(move |news| {
        if news == News::Unavailable {
            metrics.tool_warning("OutputUnavailable");
        }
        if news == News::Decisive {
            // A closed channel means the controller is shutting down.
            drop(trigger.unbounded_send(object.clone()));
            return;
        }
        let News::Warning {
            ordinal: seen,
            warning,
        } = news
        else {
            let (trigger, object) = (trigger.clone(), object.clone());
            // A closed channel means the controller is shutting down.
            throttle.fire(move || drop(trigger.unbounded_send(object)));
            return;
        };
        metrics.tool_warning(warning.reason());
        if seen > MAX_WARNING_EVENTS {
            return;
        }
        tracing::warn!(task = %object.name, warning = %warning, "tool output warning");
        let mut note = warning.to_string();
        if seen == MAX_WARNING_EVENTS {
            note.push_str(" (further output warnings of this task are not reported)");
        }
        let event = Event {
            type_: EventType::Warning,
            reason: warning.reason().to_owned(),
            note: Some(shorten(&note, 1000)),
            action: "ReadLogs".to_owned(),
            secondary: None,
        };
        events.send(&event, &reference);
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn counter() -> (Arc<AtomicUsize>, impl Fn() -> Box<dyn FnOnce() + Send>) {
        let count = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&count);
        (count, move || {
            let c = Arc::clone(&c);
            Box::new(move || {
                c.fetch_add(1, Ordering::SeqCst);
            })
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_result_or_verdict_asks_for_a_reconcile_at_once_output_is_throttled() {
        let (ctx, _server, mut triggers) = crate::fixtures::api::context(Vec::new());
        let notify = notifier(&ctx, &crate::fixtures::task());
        notify(News::Output);
        assert!(triggers.try_recv().is_ok(), "leading edge at once");
        notify(News::Output);
        assert!(
            triggers.try_recv().is_err(),
            "throttled within the interval"
        );
        notify(News::Decisive);
        assert!(
            triggers.try_recv().is_ok(),
            "a result or verdict is not held back by the throttle"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn throttle_lets_one_through_per_interval_and_keeps_the_last() {
        let throttle = Throttle::new(Duration::from_secs(1));
        let (count, send) = counter();
        throttle.fire(send());
        for _ in 0..50 {
            throttle.fire(send());
        }
        assert_eq!(count.load(Ordering::SeqCst), 1, "leading edge goes at once");
        tokio::time::sleep(Duration::from_millis(1001)).await;
        assert_eq!(
            count.load(Ordering::SeqCst),
            2,
            "one trailing send for the burst"
        );
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(count.load(Ordering::SeqCst), 2, "nothing more without news");
        throttle.fire(send());
        assert_eq!(
            count.load(Ordering::SeqCst),
            3,
            "quiet interval passed: at once again"
        );
    }
}
