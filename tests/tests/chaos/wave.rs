//! The chaos suite's waves: tasks put in flight before a fault, polled and listened to,
//! and the invariants checked after it.

use super::*;

impl Suite {
    /// Starts a wave: every task through the Service, a poller per task and three listeners,
    /// then waits until half the slow tasks are computing and cancels half the hour-long ones.
    /// Returns the wave and the hour-long tasks still to cancel.
    pub(super) async fn begin_wave(&mut self, tag: &str) -> (Vec<Planned>, Vec<String>) {
        let mut calls: Vec<(&'static str, Value, Expect)> = Vec::new();
        for (i, seconds) in self.scale.slow.iter().enumerate() {
            let label = format!("{tag}-{i}");
            let text = format!("Computed {label} in {seconds} s");
            calls.push((
                "slow_compute",
                json!({"seconds": seconds, "label": label}),
                Expect::Computed(text),
            ));
        }
        for i in 0..self.scale.cancelled {
            let args = json!({"seconds": 3600, "label": format!("{tag}-cancel-{i}")});
            calls.push(("slow_compute", args, Expect::Cancelled));
        }
        for _ in 0..self.scale.failing {
            calls.push(("failing_job", json!({}), Expect::ToolError));
            calls.push(("protocol_error_job", json!({}), Expect::Failed));
        }
        let started = futures::future::join_all(calls.into_iter().map(|(tool, args, expect)| {
            let traffic = self.traffic.clone();
            async move {
                let params = json!({"name": tool, "arguments": args});
                let created = traffic.call("tools/call", params).await;
                (created, expect)
            }
        }))
        .await;
        let mut wave = Vec::new();
        for (created, expect) in started {
            let created = created.unwrap_or_else(|e| panic!("tools/call not cured: {e}"));
            assert_eq!(created["resultType"], "task", "{created}");
            let id = created["taskId"].as_str().expect("taskId").to_owned();
            let interval =
                Duration::from_millis(created["pollIntervalMs"].as_u64().unwrap_or(1000));
            self.known.insert(id.clone());
            let poller = tokio::spawn(poll(self.traffic.clone(), id.clone(), interval));
            wave.push(Planned { id, expect, poller });
        }
        let ids: Vec<String> = wave.iter().map(|t| t.id.clone()).collect();
        for chunk in ids.chunks(ids.len().div_ceil(3)) {
            // Ends by itself once each of its tasks was notified terminal.
            drop(self.traffic.listen(chunk.to_vec()));
        }
        // In flight for real: half the slow tasks print progress (their pods run).
        let slow: Vec<&Planned> = wave
            .iter()
            .filter(|t| matches!(t.expect, Expect::Computed(_)))
            .collect();
        let waited = Instant::now();
        while slow
            .iter()
            .filter(|t| {
                self.recorder
                    .of(&t.id)
                    .iter()
                    .any(|s| s.message.as_deref().is_some_and(|m| m.contains(" of ")))
            })
            .count()
            < slow.len().div_ceil(2)
        {
            assert!(
                waited.elapsed() < PATIENCE,
                "the wave's tasks never started computing"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let mut to_cancel: Vec<String> = wave
            .iter()
            .filter(|t| t.expect == Expect::Cancelled)
            .map(|t| t.id.clone())
            .collect();
        let later = to_cancel.split_off(to_cancel.len() / 2);
        self.cancel(&to_cancel).await;
        (wave, later)
    }

    pub(super) async fn cancel(&self, ids: &[String]) {
        for id in ids {
            self.traffic
                .call("tasks/cancel", json!({"taskId": id}))
                .await
                .unwrap_or_else(|e| panic!("tasks/cancel not cured: {e}"));
        }
    }

    /// Tasks of the namespace not yet terminal, by the API server.
    pub(super) async fn in_flight(&self) -> usize {
        let tasks: Api<McpTask> = Api::namespaced(self.client.clone(), &self.ns);
        let list = tasks
            .list(&ListParams::default())
            .await
            .expect("list tasks");
        list.items.iter().filter(|t| !t.is_terminal()).count()
    }

    /// Waits until both Deployments' pods are Ready and a fresh task completes through the
    /// Service; returns the time since `since`.
    pub(super) async fn recover(&self, since: Instant) -> Duration {
        while !(pods_ready(&self.client, &self.ns, FRONTEND, 2).await
            && pods_ready(&self.client, &self.ns, OPERATOR, 2).await)
        {
            assert!(since.elapsed() < PATIENCE, "replicas not Ready again");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let args = json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": "probe"}});
        let created = self
            .traffic
            .call("tools/call", args)
            .await
            .expect("probe task");
        let id = created["taskId"].as_str().expect("taskId").to_owned();
        loop {
            let got = self
                .traffic
                .call("tasks/get", json!({"taskId": id}))
                .await
                .expect("probe task polled");
            if got["status"] == "completed" {
                return since.elapsed();
            }
            assert!(since.elapsed() < PATIENCE * 2, "probe task not done: {got}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Ends a wave: cancels the rest, measures recovery, then checks every invariant.
    pub(super) async fn finish_wave(
        &mut self,
        fault: Fault,
        wave: Vec<Planned>,
        later: Vec<String>,
    ) {
        self.cancel(&later).await;
        let recovery = self.recover(fault.injected).await;
        let restarts = self.restarts().await;
        let after_heal = fault.healed.map(|h| h.elapsed());
        let mut regressions: Vec<Instant> = Vec::new();
        for task in wave {
            let polled = tokio::time::timeout(PATIENCE, task.poller)
                .await
                .unwrap_or_else(|_| panic!("task {} never ended", task.id))
                .expect("poller ran")
                .unwrap_or_else(|e| panic!("a client error no retry cured: {e}"));
            regressions.extend(polled.regressions);
            check_terminal(&task.id, &task.expect, &polled.terminal);
            let uids = self.jobs.uids(&task.id);
            assert_eq!(uids.len(), 1, "Job {} had UIDs {uids:?}", task.id);
            self.wait_notified(&task.id).await;
        }
        assert!(
            self.jobs.duplicated().is_empty(),
            "Jobs created twice: {:?}",
            self.jobs.duplicated()
        );
        self.recorder.assert_terminal_statuses_never_change();
        self.check_orphans().await;
        let offsets: Vec<String> = regressions
            .iter()
            .map(|at| format!("{:+.1} s", at.duration_since(fault.injected).as_secs_f64()))
            .collect();
        let regressions = if offsets.is_empty() {
            "0".to_owned()
        } else {
            format!(
                "{} (at {} from the fault)",
                offsets.len(),
                offsets.join(", ")
            )
        };
        let failures = self.traffic.record.failures();
        let uncured: Vec<_> = failures.iter().filter(|f| !f.cured).collect();
        assert!(
            uncured.is_empty(),
            "client errors never cured: {uncured:#?}"
        );
        let during: Vec<_> = failures
            .iter()
            .skip(self.rows.iter().map(|r| r.client_failures).sum())
            .collect();
        for f in during.iter().take(12) {
            eprintln!(
                "  client error (cured): {} after {:?}: {}",
                f.method, f.took, f.what
            );
        }
        eprintln!(
            "{}: {} tasks in flight; recovered in {:.1} s{}; {} client errors, all cured by a \
             retry; {regressions} polls saw another status after a terminal one; {}",
            fault.name,
            fault.in_flight,
            recovery.as_secs_f64(),
            after_heal.map_or(String::new(), |d| format!(
                " ({:.1} s after the heal)",
                d.as_secs_f64()
            )),
            during.len(),
            fault.note,
        );
        self.rows.push(Row {
            fault: fault.name,
            in_flight: fault.in_flight,
            recovery,
            after_heal,
            client_failures: during.len(),
            note: format!(
                "{}; {regressions} stale polls after terminal; container restarts so far: {restarts}",
                fault.note
            ),
        });
    }

    /// Waits until a listen stream delivered the task's terminal status.
    pub(super) async fn wait_notified(&self, id: &str) {
        let started = Instant::now();
        loop {
            let seen = self.traffic.record.notified(id);
            if seen
                .iter()
                .any(|s| matches!(s.as_str(), "completed" | "failed" | "cancelled"))
            {
                return;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "no listen stream delivered a terminal status of {id}: {seen:?}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Tasks that a retried tools/call created besides the one it answered with: they must end
    /// too (each is a slow_compute, failing_job or protocol_error_job of a wave).
    pub(super) async fn check_orphans(&mut self) {
        let tasks: Api<McpTask> = Api::namespaced(self.client.clone(), &self.ns);
        let list = tasks
            .list(&ListParams::default())
            .await
            .expect("list tasks");
        let probes = list.items.iter().filter(|t| {
            t.spec.arguments.as_ref().and_then(|a| a.member("label")) == Some(json!("probe"))
        });
        let orphans: Vec<&McpTask> = list
            .items
            .iter()
            .filter(|t| !self.known.contains(&t.name_any()))
            .filter(|t| !probes.clone().any(|p| p.name_any() == t.name_any()))
            .collect();
        for orphan in &orphans {
            eprintln!(
                "  task {} was created by a tools/call whose answer was lost; status {:?}",
                orphan.name_any(),
                orphan.status.as_ref().map(|s| s.status)
            );
        }
    }

    pub(super) fn print_table(&self, scale: &str, took: Duration) {
        println!("\nchaos ({scale}) took {:.0} s", took.as_secs_f64());
        println!(
            "| fault | tasks in flight | recovery (fault -> all Ready + fresh task done) | client errors (all cured) | notes |"
        );
        println!("|---|---|---|---|---|");
        for row in &self.rows {
            let heal = row.after_heal.map_or(String::new(), |d| {
                format!(", {:.1} s after the heal", d.as_secs_f64())
            });
            println!(
                "| {} | {} | {:.1} s{heal} | {} | {} |",
                row.fault,
                row.in_flight,
                row.recovery.as_secs_f64(),
                row.client_failures,
                row.note
            );
        }
    }

    /// Container restarts of the operator and front-end pods so far.
    pub(super) async fn restarts(&self) -> String {
        let mut counts = Vec::new();
        for (selector, kind) in [(OPERATOR, "operator"), (FRONTEND, "front end")] {
            let total: i32 = self
                .pods(selector)
                .await
                .iter()
                .filter_map(|p| p.status.as_ref()?.container_statuses.as_ref())
                .flatten()
                .map(|c| c.restart_count)
                .sum();
            counts.push(format!("{kind} {total}"));
        }
        counts.join(", ")
    }

    pub(super) async fn pods(&self, selector: &str) -> Vec<Pod> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let mut list = pods
            .list(&ListParams::default().labels(selector))
            .await
            .expect("list pods")
            .items;
        list.sort_by_key(ResourceExt::name_any);
        list
    }
}

/// Polls `tasks/get` at the advised interval until the task is terminal, then twice more.
async fn poll(traffic: Traffic, id: String, interval: Duration) -> Result<Polled, String> {
    let mut terminal: Option<Value> = None;
    let mut regressions = Vec::new();
    let mut after = 0;
    loop {
        let got = traffic.call("tasks/get", json!({"taskId": id})).await?;
        match &terminal {
            Some(first) => {
                if first["status"] != got["status"] {
                    regressions.push(Instant::now());
                }
                after += 1;
                if after >= 2 {
                    let terminal = terminal.expect("terminal");
                    return Ok(Polled {
                        terminal,
                        regressions,
                    });
                }
            }
            None => {
                if matches!(
                    got["status"].as_str(),
                    Some("completed" | "failed" | "cancelled")
                ) {
                    terminal = Some(got);
                }
            }
        }
        tokio::time::sleep(interval).await;
    }
}

/// Panics unless the `tasks/get` result is the terminal state `expect`.
fn check_terminal(id: &str, expect: &Expect, got: &Value) {
    let status = got["status"].as_str().unwrap_or_default();
    match expect {
        Expect::Computed(text) => {
            assert_eq!(status, "completed", "{id}: {got}");
            assert_eq!(
                got["result"]["content"][0]["text"],
                json!(text),
                "{id}: {got}"
            );
            assert_ne!(got["result"]["isError"], json!(true), "{id}: {got}");
        }
        Expect::ToolError => {
            assert_eq!(status, "completed", "{id}: {got}");
            assert_eq!(got["result"]["isError"], json!(true), "{id}: {got}");
        }
        Expect::Failed => {
            assert_eq!(status, "failed", "{id}: {got}");
            assert_eq!(got["error"]["code"], json!(-32603), "{id}: {got}");
        }
        Expect::Cancelled => assert_eq!(status, "cancelled", "{id}: {got}"),
    }
}
