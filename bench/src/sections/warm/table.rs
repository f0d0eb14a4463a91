//! The warm-start section's tables: the interleaved calls' figures and the load point's.

use std::time::Duration;

use crate::report::Section;
use crate::stats::{ms, nearest_rank, quantile};

use super::setup::STEADY;
use super::{Call, KINDS, since, steady};

/// The rows of the main table.
pub(super) fn rows(section: &mut Section, calls: &[Vec<Call>; 4], floors: &mut [Duration]) {
    type Span = fn(&Call) -> Option<Duration>;
    let figures: [(&str, Span, bool, &str, &str); 5] = [
        (
            "tools/call → CreateTaskResult",
            |c| Some(since(c.called, c.answered)),
            false,
            "",
            "",
        ),
        (
            "task created (CreateTaskResult) → tool started",
            |c| c.started.map(|s| since(c.answered, s)),
            true,
            "< 150 ms",
            "",
        ),
        (
            "task created → statusMessage Running seen (tasks that showed it)",
            |c| c.running_message.map(|r| since(c.answered, r)),
            true,
            "",
            "",
        ),
        (
            "task created → its own pod running (pod watch)",
            |c| c.pod_running.map(|r| since(c.answered, r)),
            true,
            "",
            "",
        ),
        (
            "tools/call → completed (task watch)",
            |c| Some(since(c.called, c.completed)),
            false,
            "< 300 ms",
            "< 500 ms",
        ),
    ];
    for (what, span, native_only, native_goal, time_goal) in figures {
        for (kind, calls) in KINDS.iter().zip(calls) {
            if native_only && !kind.native() {
                continue;
            }
            let mut samples: Vec<Duration> = calls.iter().filter_map(span).collect();
            if samples.is_empty() {
                continue;
            }
            let goal = match (kind.warm(), kind.native()) {
                (true, true) => native_goal,
                (true, false) => time_goal,
                _ => "",
            };
            section.row(durations(
                &format!("{}: {what}", kind.label()),
                &mut samples,
                goal,
            ));
        }
    }
    section.row(durations(
        "mcp-server-time over stdio on this machine, already running: tools/call → answer (the floor)",
        floors,
        "",
    ));
    for (warm, cold, what) in [(0, 1, "native"), (2, 3, "mcp-server-time")] {
        let ratios: Vec<f64> = calls[warm]
            .iter()
            .zip(&calls[cold])
            .map(|(w, c)| {
                let (w, c) = (since(w.called, w.completed), since(c.called, c.completed));
                w.as_secs_f64() / c.as_secs_f64().max(1e-9)
            })
            .collect();
        section.row(spread(
            &format!("{what}: warm ÷ cold, tools/call → completed, per round"),
            ratios,
            |r| format!("{r:.3}×"),
        ));
    }
}

/// The load point's table.
pub(super) fn load_table(settings: &steady::Settings, outcome: &steady::Outcome) -> Section {
    let title = format!(
        "8b. The pool under a steady Poisson load at {:.0} % of the tool's limit",
        settings.load * 100.0
    );
    let mut table = Section::new(&title, &["figure", "value", "goal"]);
    let minutes = settings.window.as_secs_f64() / 60.0;
    let per_minute = outcome.calls as f64 / minutes;
    let hit_rate = outcome.hits as f64 / outcome.calls.max(1) as f64 * 100.0;
    let mean = |v: &[usize]| v.iter().sum::<usize>() as f64 / v.len().max(1) as f64;
    let max = |v: &[usize]| v.iter().copied().max().unwrap_or(0);
    let allowed = per_minute / 10.0;
    let mut hit_start = outcome.hit_start.clone();
    let mut miss_start = outcome.miss_start.clone();
    let show = |samples: &mut Vec<Duration>| {
        format!(
            "{} / {} (n {})",
            ms(quantile(samples, 0.5)),
            ms(quantile(samples, 0.9)),
            samples.len()
        )
    };
    let cells: [(&str, String, &str); 8] = [
        (
            "calls in the window (rate)",
            format!("{} ({per_minute:.0} a minute)", outcome.calls),
            "",
        ),
        (
            "ran in a claimed pod (hits)",
            format!(
                "**{hit_rate:.1} %** ({} of {}; {} cold, {} not completed)",
                outcome.hits, outcome.calls, outcome.misses, outcome.not_completed
            ),
            "≥ 95 %",
        ),
        (
            "waiting pool Jobs, mean / max (1 sample a second)",
            format!("{:.2} / {}", mean(&outcome.waiting), max(&outcome.waiting)),
            "",
        ),
        (
            "of them ready (idle pods), mean / max",
            format!("{:.2} / {}", mean(&outcome.ready), max(&outcome.ready)),
            "",
        ),
        (
            "idle pods allowed: one per ten calls a minute",
            format!(
                "{allowed:.1}; mean waiting ÷ allowed = {:.2}",
                mean(&outcome.waiting) / allowed.max(1e-9)
            ),
            "≤ 1",
        ),
        (
            "calls waiting for a slot (at the limit), mean / max",
            format!("{:.2} / {}", mean(&outcome.queued), max(&outcome.queued)),
            "",
        ),
        (
            "hits: tools/call → tool started, median / p90",
            show(&mut hit_start),
            "",
        ),
        (
            "misses: tools/call → tool started, median / p90",
            show(&mut miss_start),
            "",
        ),
    ];
    for (what, value, goal) in cells {
        table.row(vec![what.to_owned(), value, goal.to_owned()]);
    }
    table.note(format!(
        "Tool `{STEADY}`: busybox, notes its start and sleeps {} s; maxConcurrentTasks {}, \
         warmPool minReady 1, maxReady {}; calls through the front end with exponential gaps \
         at {:.2} a second ({} × {} ÷ {} s), {} s unrecorded, then {} s recorded; every \
         recorded task followed to its end. A hit ran in a Job of the pool (its status.jobName \
         is not its own name).",
        settings.work.as_secs(),
        settings.limit,
        settings.limit,
        settings.rate(),
        settings.load,
        settings.limit,
        settings.work.as_secs(),
        settings.warmup.as_secs(),
        settings.window.as_secs()
    ));
    let timeline: Vec<String> = outcome
        .timeline
        .iter()
        .map(|(hits, calls)| format!("{hits}/{calls}"))
        .collect();
    table.note(format!(
        "Hits / calls per {} s from the start of the load (the first {} s unrecorded): {}.",
        steady::SLICE.as_secs(),
        settings.warmup.as_secs(),
        timeline.join(", ")
    ));
    table
}

fn durations(what: &str, samples: &mut [Duration], goal: &str) -> Vec<String> {
    let n = samples.len();
    vec![
        what.to_owned(),
        n.to_string(),
        ms(quantile(samples, 0.5)),
        ms(quantile(samples, 0.9)),
        ms(quantile(samples, 1.0)),
        goal.to_owned(),
    ]
}

fn spread(what: &str, mut samples: Vec<f64>, show: impl Fn(f64) -> String) -> Vec<String> {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| nearest_rank(&samples, q).map_or_else(|| "n/a".to_owned(), &show);
    vec![
        what.to_owned(),
        samples.len().to_string(),
        at(0.5),
        at(0.9),
        at(1.0),
        String::new(),
    ]
}
