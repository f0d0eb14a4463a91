//! Fault injection on the local cluster, for `tests/tests/chaos/` (and the memory samples of
//! `tests/tests/load.rs`): host PIDs of our containers (through the kubelet's cgroups),
//! stopping and starting cluster components with `hack/cluster-ctl.sh` under guards that start
//! them again whatever happens, cutting one pod off the API server with iptables in its network
//! namespace, and a watch that records every Job UID ever seen.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

use crate::stack::output_text;

/// Root of the pids cgroup hierarchy, where the kubelet (cgroupfs driver) puts pod cgroups.
const KUBEPODS: &str = "/sys/fs/cgroup/pids/kubepods";

/// The host PID of the main process (PID 1 in its namespace) of `container` in `pod`, found
/// through the container's cgroup. Panics when the container does not run.
pub fn container_pid(pod: &Pod, container: &str) -> u32 {
    find_container_pid(pod, container).unwrap_or_else(|e| panic!("{e}"))
}

/// [`container_pid`], saying why when the container does not run.
pub fn find_container_pid(pod: &Pod, container: &str) -> Result<u32, String> {
    let status = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|all| all.iter().find(|c| c.name == container))
        .ok_or_else(|| format!("pod {} has no container {container}", pod.name_any()))?;
    let id = status
        .container_id
        .as_deref()
        .and_then(|id| id.split("://").nth(1))
        .ok_or_else(|| format!("container {container} of {} has no ID", pod.name_any()))?;
    let dir = find_dir(Path::new(KUBEPODS), id, 3)
        .ok_or_else(|| format!("no cgroup {id} under {KUBEPODS}"))?;
    let procs = std::fs::read_to_string(dir.join("cgroup.procs"))
        .map_err(|e| format!("cannot read {}/cgroup.procs: {e}", dir.display()))?;
    procs
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find(|l| l.starts_with("NSpid:"))
                        .map(|l| l.ends_with("\t1"))
                })
                .unwrap_or(false)
        })
        .ok_or_else(|| format!("no init process in cgroup {}", dir.display()))
}

fn find_dir(root: &Path, name: &str, depth: u32) -> Option<PathBuf> {
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if entry.file_name() == name {
            return Some(path);
        }
        if depth > 0
            && let Some(found) = find_dir(&path, name, depth - 1)
        {
            return Some(found);
        }
    }
    None
}

/// Sends SIG`name` (`STOP`, `CONT`, ...) to the host process `pid`.
pub fn signal(name: &str, pid: u32) {
    let out = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .output()
        .expect("kill runs");
    assert!(
        out.status.success(),
        "kill -{name} {pid}: {}",
        output_text(&out)
    );
}

/// Resident memory (`VmRSS`) of a process in KiB, if it runs.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Established TCP connections a process holds (its socket descriptors, looked up in its
/// network namespace's `/proc/<pid>/net/tcp` and `tcp6`), if it runs.
pub fn tcp_connections(pid: u32) -> Option<usize> {
    let sockets: std::collections::HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy();
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_owned(),
            )
        })
        .collect();
    let mut established = 0;
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        // Columns: sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...; 01 is
        // ESTABLISHED.
        established += text
            .lines()
            .skip(1)
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .filter(|cols| cols.get(3) == Some(&"01"))
            .filter(|cols| cols.get(9).is_some_and(|inode| sockets.contains(*inode)))
            .count();
    }
    Some(established)
}

/// The PID `hack/cluster-up.sh` recorded for a cluster component, if the file exists.
pub fn component_pid(component: &str) -> Option<u32> {
    let state = std::env::var("MTO_STATE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| crate::repo_dir().join(".state"));
    std::fs::read_to_string(state.join("pids").join(format!("{component}.pid")))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Runs `hack/cluster-ctl.sh ACTION COMPONENT`; panics with its output when it fails.
pub fn cluster_ctl(action: &str, component: &str) {
    crate::run_script("hack/cluster-ctl.sh", &[action, component]);
}

/// Starts a stopped cluster component again when dropped (also on a panic), unless it runs.
pub struct Restore(pub &'static str);

impl Drop for Restore {
    fn drop(&mut self) {
        let script = crate::repo_dir().join("hack/cluster-ctl.sh");
        match std::process::Command::new(&script)
            .args(["start", self.0])
            .output()
        {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!(
                "could not start {} again; start it by hand (hack/cluster-ctl.sh start {}):\n{}",
                self.0,
                self.0,
                output_text(&out)
            ),
            Err(e) => eprintln!("could not run {}: {e}", script.display()),
        }
    }
}

/// iptables rules in one pod's network namespace that drop its traffic to and from the API
/// server (the `kubernetes` Service address and the API server's own); removed when dropped.
pub struct Partition {
    pid: u32,
    rules: Vec<Vec<String>>,
}

impl Partition {
    /// Cuts the network namespace of process `pid` off `service` (`ip:port`, the `kubernetes`
    /// Service) and `endpoint` (the API server's `ip:port`).
    pub fn cut(pid: u32, service: &str, endpoint: &str) -> Self {
        let mut rules = Vec::new();
        for target in [service, endpoint] {
            let (ip, port) = target.split_once(':').expect("ip:port");
            rules.push(rule("OUTPUT", "-d", ip, "--dport", port));
            rules.push(rule("INPUT", "-s", ip, "--sport", port));
        }
        let mut partition = Self {
            pid,
            rules: Vec::new(),
        };
        for r in rules {
            // Recorded first: a rule half-applied is still removed on drop.
            partition.rules.push(r.clone());
            assert!(
                partition.iptables("-I", &r),
                "cannot add iptables rule {r:?}"
            );
        }
        partition
    }

    fn iptables(&self, op: &str, rule: &[String]) -> bool {
        let pid = self.pid.to_string();
        let mut args = vec!["-t", &pid, "-n", "iptables", "-w", op];
        args.extend(rule.iter().map(String::as_str));
        let out = std::process::Command::new("nsenter")
            .args(&args)
            .output()
            .expect("nsenter runs");
        if !out.status.success() {
            eprintln!("nsenter {args:?} failed:\n{}", output_text(&out));
        }
        out.status.success()
    }

    /// The same rules, reached through process `pid` from now on: another process in the same
    /// network namespace (the pod's), for when the process the cut entered through has exited
    /// (its container restarted).
    pub fn through(mut self, pid: u32) -> Self {
        self.pid = pid;
        self
    }

    /// Removes the rules (what dropping does), saying whether every one was removed.
    pub fn heal(mut self) -> bool {
        self.remove()
    }

    fn remove(&mut self) -> bool {
        let rules = std::mem::take(&mut self.rules);
        rules.iter().all(|r| self.iptables("-D", r))
    }
}

fn rule(chain: &str, addr_flag: &str, ip: &str, port_flag: &str, port: &str) -> Vec<String> {
    [
        chain, "-p", "tcp", addr_flag, ip, port_flag, port, "-j", "DROP",
    ]
    .map(str::to_owned)
    .to_vec()
}

impl Drop for Partition {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Whether `want` pods match `selector` in `ns`, none terminating, all Ready.
pub async fn pods_ready(client: &Client, ns: &str, selector: &str, want: usize) -> bool {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let Ok(list) = pods.list(&ListParams::default().labels(selector)).await else {
        return false;
    };
    list.items.len() == want
        && list
            .items
            .iter()
            .all(|p| p.metadata.deletion_timestamp.is_none() && pod_is_ready(p))
}

/// Whether the pod's `Ready` condition is `True`.
pub fn pod_is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Watches the Jobs of a namespace and records every UID each Job name ever had.
pub struct JobRecorder {
    uids: Arc<Mutex<BTreeMap<String, BTreeSet<String>>>>,
    watch: tokio::task::JoinHandle<()>,
}

impl JobRecorder {
    /// Starts watching `ns` (the watch resumes by itself after API server outages).
    pub fn start(client: &Client, ns: &str) -> Self {
        let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
        let uids: Arc<Mutex<BTreeMap<String, BTreeSet<String>>>> = Arc::default();
        let seen = Arc::clone(&uids);
        let watch = crate::follow(jobs, move |job| {
            if let Some(uid) = job.uid() {
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .entry(job.name_any())
                    .or_default()
                    .insert(uid);
            }
        });
        Self { uids, watch }
    }

    /// Every UID seen for the Job `name`.
    pub fn uids(&self, name: &str) -> BTreeSet<String> {
        self.uids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    /// Names of Jobs that had more than one UID (a Job created twice).
    pub fn duplicated(&self) -> Vec<(String, BTreeSet<String>)> {
        self.uids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, uids)| uids.len() > 1)
            .map(|(name, uids)| (name.clone(), uids.clone()))
            .collect()
    }
}

impl Drop for JobRecorder {
    fn drop(&mut self) {
        self.watch.abort();
    }
}
