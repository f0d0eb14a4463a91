//! The method of the `tasks/get` points: interleaved rounds. In each round every contender
//! (a server and its request) is driven once for the same window, in an order rotated round by
//! round, so slow drift of the shared machine (other builds, the cluster) touches every
//! contender alike; each figure is then the median of the per-round paired ratios, with its
//! range. Server CPU per request comes from `/proc/<pid>/stat` around each window.

use std::time::Duration;

use crate::load::{self, LoadResult, Target};
use crate::procs::cpu_time;

/// One server and what to send it.
#[derive(Clone, Debug)]
pub struct Contender {
    /// Name in the report.
    pub name: String,
    /// The requests.
    pub target: Target,
    /// The server's process, whose CPU time is read around each window.
    pub pid: u32,
}

/// One contender in one round.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// The load generator's figures.
    pub load: LoadResult,
    /// Server CPU time (user + system) per answered request in the window.
    pub cpu_per_request: Duration,
}

/// Every sample of one point: `samples[contender][round]`.
#[derive(Clone, Debug, Default)]
pub struct Point {
    /// Per contender, per round.
    pub samples: Vec<Vec<Sample>>,
}

impl Point {
    /// Requests per second of contender `c`, round by round.
    pub fn rps(&self, c: usize) -> Vec<f64> {
        self.samples[c].iter().map(|s| s.load.rps).collect()
    }

    /// Server CPU µs per request of contender `c`, round by round.
    pub fn cpu_us(&self, c: usize) -> Vec<f64> {
        self.samples[c]
            .iter()
            .map(|s| s.cpu_per_request.as_secs_f64() * 1e6)
            .collect()
    }

    /// Median latency in ms of contender `c`, round by round.
    pub fn p50_ms(&self, c: usize) -> Vec<f64> {
        self.samples[c]
            .iter()
            .map(|s| s.load.p50.as_secs_f64() * 1e3)
            .collect()
    }

    /// Failed requests of contender `c` over every round.
    pub fn failed(&self, c: usize) -> u64 {
        self.samples[c].iter().map(|s| s.load.failed).sum()
    }
}

/// The order of `n` contenders in round `round`: rotated by one each round.
pub fn order(n: usize, round: usize) -> Vec<usize> {
    (0..n).map(|i| (i + round) % n).collect()
}

/// Measures `contenders` at `connections` connections for `rounds` interleaved rounds of
/// `window` each (after an unrecorded warm-up of a quarter window).
pub async fn measure(
    contenders: &[Contender],
    connections: usize,
    rounds: usize,
    window: Duration,
) -> Result<Point, String> {
    let mut point = Point {
        samples: vec![Vec::with_capacity(rounds); contenders.len()],
    };
    for round in 0..rounds {
        for c in order(contenders.len(), round) {
            let contender = &contenders[c];
            load::run(&contender.target, connections, Duration::ZERO, window / 4).await;
            let before = cpu_time(contender.pid)?;
            let load = load::run(&contender.target, connections, Duration::ZERO, window).await;
            let used = cpu_time(contender.pid)?.saturating_sub(before);
            let answered = (load.ok + load.failed).max(1);
            point.samples[c].push(Sample {
                cpu_per_request: used / answered as u32,
                load,
            });
        }
    }
    Ok(point)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_rotates_the_order() {
        assert_eq!(order(3, 0), [0, 1, 2]);
        assert_eq!(order(3, 1), [1, 2, 0]);
        assert_eq!(order(3, 2), [2, 0, 1]);
        assert_eq!(order(3, 3), [0, 1, 2]);
    }
}
