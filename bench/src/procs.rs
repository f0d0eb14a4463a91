//! What the harness reads from and does to server processes: CPU time from
//! `/proc/<pid>/stat` and CPU pinning with `taskset`.

use std::time::Duration;

/// CPU time (user + system, every thread) process `pid` has used so far.
pub fn cpu_time(pid: u32) -> Result<Duration, String> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    cpu_time_of(&text, clock_ticks()).ok_or_else(|| format!("{path} has no utime and stime"))
}

/// utime + stime (fields 14 and 15, in clock ticks) of a `/proc/<pid>/stat` line. The command
/// name (field 2) is in parentheses and may hold spaces, so fields are counted after its `)`.
fn cpu_time_of(stat: &str, ticks_per_second: u64) -> Option<Duration> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_secs_f64(
        (utime + stime) as f64 / ticks_per_second as f64,
    ))
}

/// `getconf CLK_TCK` (100 on Linux unless told otherwise).
fn clock_ticks() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100)
    })
}

/// Pins every thread of process `pid` (and the threads it starts later) to `cpus` (a
/// `taskset` list such as `1` or `0-1`).
pub fn pin(pid: u32, cpus: &str) -> Result<(), String> {
    let out = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid.to_string()])
        .output()
        .map_err(|e| format!("cannot run taskset: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "taskset -a -p -c {cpus} {pid} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The number of CPUs this process may run on.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_a_command_name_with_spaces() {
        let stat = "42 (my (odd) name) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0";
        assert_eq!(cpu_time_of(stat, 100), Some(Duration::from_secs(3)));
        assert_eq!(cpu_time_of("42 (x) S 1", 100), None);
    }

    #[test]
    fn own_cpu_time_is_readable() {
        assert!(cpu_time(std::process::id()).is_ok());
    }
}
