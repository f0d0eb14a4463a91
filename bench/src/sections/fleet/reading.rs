//! Readings taken before and after a fleet run: the API server's requests by verb and
//! resource, etcd's database size, and the memory and CPU time of our two processes.

use std::collections::BTreeMap;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

/// etcd's metrics, on loopback (hack/cluster-up.sh serves its client URL there, plain HTTP).
const ETCD_METRICS: &str = "http://127.0.0.1:2379/metrics";
/// Bytes of etcd's database in use (what the keys take now, without free pages).
const ETCD_IN_USE: &str = "etcd_mvcc_db_total_size_in_use_in_bytes";

/// A series of `apiserver_request_total`: verb, resource and subresource (`pods`, `log`).
pub type RequestKey = (String, String, String);

/// One moment's readings.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    /// `apiserver_request_total` summed by verb, resource and subresource.
    pub requests: BTreeMap<RequestKey, f64>,
    /// etcd's database in use, bytes.
    pub etcd_bytes: f64,
    /// CPU seconds (user + system) of each watched process so far.
    pub cpu_seconds: Vec<f64>,
}

impl Reading {
    /// Takes the readings; `pids` are the processes whose CPU time is read.
    pub async fn take(pids: &[u32]) -> Result<Self, String> {
        let out = mcp_task_operator_harness::kubectl(&["get", "--raw", "/metrics"]);
        if !out.status.success() {
            return Err(format!(
                "kubectl get --raw /metrics failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let etcd = etcd_metrics().await?;
        Ok(Self {
            requests: requests_by_kind(&String::from_utf8_lossy(&out.stdout)),
            etcd_bytes: crate::cluster::sum_counter(&etcd, ETCD_IN_USE, &[]),
            cpu_seconds: pids
                .iter()
                .map(|&pid| cpu_seconds(pid))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Requests since `earlier`, by series, largest first (series that did not move left out).
    pub fn requests_since(&self, earlier: &Self) -> Vec<(RequestKey, f64)> {
        let mut moved: Vec<(RequestKey, f64)> = self
            .requests
            .iter()
            .map(|(key, n)| {
                let before = earlier.requests.get(key).copied().unwrap_or_default();
                (key.clone(), n - before)
            })
            .filter(|(_, n)| *n > 0.0)
            .collect();
        moved.sort_by(|a, b| b.1.total_cmp(&a.1));
        moved
    }
}

/// `apiserver_request_total` (Prometheus text) summed by verb, resource and subresource.
pub fn requests_by_kind(text: &str) -> BTreeMap<RequestKey, f64> {
    let mut sums = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        let label = |name: &str| {
            let start = format!("{name}=\"");
            labels
                .split(',')
                .find_map(|pair| pair.strip_prefix(&start)?.strip_suffix('"'))
                .unwrap_or_default()
                .to_owned()
        };
        *sums
            .entry((label("verb"), label("resource"), label("subresource")))
            .or_default() += value;
    }
    sums
}

/// `verb resource[/subresource]`, as the report prints a series.
pub fn describe(key: &RequestKey) -> String {
    let (verb, resource, subresource) = key;
    if subresource.is_empty() {
        format!("{verb} {resource}")
    } else {
        format!("{verb} {resource}/{subresource}")
    }
}

async fn etcd_metrics() -> Result<String, String> {
    let request = hyper::Request::get(ETCD_METRICS)
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let response = mcp_task_operator_harness::mcp_client::http_client()
        .request(request)
        .await
        .map_err(|e| format!("cannot read {ETCD_METRICS}: {e}"))?;
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("cannot read {ETCD_METRICS}: {e}"))?
        .to_bytes();
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// User plus system CPU seconds of process `pid` (`/proc/<pid>/stat` fields 14 and 15, in
/// clock ticks of 1/100 s, Linux's `USER_HZ` on x86-64).
pub fn cpu_seconds(pid: u32) -> Result<f64, String> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after = text
        .rsplit_once(") ")
        .map(|(_, rest)| rest)
        .ok_or_else(|| format!("{path} has no command field"))?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // `after` starts at field 3 (state), so fields 14 and 15 are at 11 and 12.
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .ok_or_else(|| format!("{path} field {} is not a number", i + 3))
    };
    Ok((tick(11)? + tick(12)?) / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_summed_by_verb_resource_and_subresource() {
        let text = "\
apiserver_request_total{code=\"200\",component=\"apiserver\",resource=\"pods\",subresource=\"log\",verb=\"GET\"} 4
apiserver_request_total{code=\"404\",component=\"apiserver\",resource=\"pods\",subresource=\"log\",verb=\"GET\"} 1
apiserver_request_total{code=\"200\",component=\"apiserver\",resource=\"pods\",subresource=\"\",verb=\"LIST\"} 2
apiserver_request_total_other{resource=\"pods\",verb=\"GET\"} 100
";
        let sums = requests_by_kind(text);
        let log = ("GET".into(), "pods".into(), "log".into());
        assert_eq!(sums[&log], 5.0);
        assert_eq!(describe(&log), "GET pods/log");
        assert_eq!(sums.len(), 2);
    }

    #[test]
    fn own_cpu_time_is_readable() {
        assert!(cpu_seconds(std::process::id()).expect("own /proc stat") >= 0.0);
    }
}
