//! The faults the chaos suite injects, one wave each.

use super::*;

impl Suite {
    /// a. SIGKILL the process of the operator that holds the Lease.
    pub(super) async fn kill_operator_leader(&mut self) {
        let (wave, later) = self.begin_wave("leader").await;
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), &self.ns);
        let lease = leases
            .list(&ListParams::default().labels(OPERATOR))
            .await
            .expect("list leases")
            .items
            .into_iter()
            .next()
            .expect("the operator Lease");
        let holder = lease
            .spec
            .and_then(|s| s.holder_identity)
            .expect("a leader");
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let pod = pods.get(&holder).await.expect("leader pod");
        let pid = container_pid(&pod, "operator");
        let in_flight = self.in_flight().await;
        let injected = Instant::now();
        kill9(pid);
        // Someone leads again once the Lease is renewed after the kill.
        let killed_at = k8s_openapi::jiff::Timestamp::now();
        let new_holder = loop {
            let lease = leases
                .get(&lease.metadata.name.clone().expect("name"))
                .await;
            if let Ok(Lease {
                spec: Some(spec), ..
            }) = lease
                && spec.renew_time.as_ref().is_some_and(|t| t.0 > killed_at)
            {
                break spec.holder_identity.unwrap_or_default();
            }
            assert!(injected.elapsed() < PATIENCE, "nobody leads after the kill");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let note = format!(
            "SIGKILL pid {pid} of leader {holder}; {new_holder} led {:.1} s later",
            injected.elapsed().as_secs_f64()
        );
        let fault = Fault {
            name: "a. operator leader SIGKILL",
            in_flight,
            injected,
            healed: None,
            note,
        };
        self.finish_wave(fault, wave, later).await;
    }

    /// b. SIGKILL the process of one front-end replica while every task is being polled.
    pub(super) async fn kill_frontend_replica(&mut self) {
        let (wave, later) = self.begin_wave("frontend").await;
        let pods = self.pods(FRONTEND).await;
        let pod = &pods[0];
        let pid = container_pid(pod, "mcp-frontend");
        let in_flight = self.in_flight().await;
        let injected = Instant::now();
        kill9(pid);
        let note = format!("SIGKILL pid {pid} of {}", pod.name_any());
        let fault = Fault {
            name: "b. front-end replica SIGKILL",
            in_flight,
            injected,
            healed: None,
            note,
        };
        self.finish_wave(fault, wave, later).await;
    }

    /// c. Restart kube-apiserver with its own command line (`hack/cluster-ctl.sh restart`).
    pub(super) async fn restart_apiserver(&mut self) {
        let (wave, later) = self.begin_wave("apiserver").await;
        let in_flight = self.in_flight().await;
        let injected = Instant::now();
        {
            let _restore = Restore("kube-apiserver");
            block_in_place(|| cluster_ctl("restart", "kube-apiserver"));
        }
        let healed = Instant::now();
        let note = format!(
            "stop (SIGTERM) + start took {:.1} s",
            (healed - injected).as_secs_f64()
        );
        let fault = Fault {
            name: "c. kube-apiserver restart",
            in_flight,
            injected,
            healed: Some(healed),
            note,
        };
        self.finish_wave(fault, wave, later).await;
    }

    /// d. Stop the kubelet for the outage, then start it again.
    pub(super) async fn stop_kubelet(&mut self) {
        let (wave, later) = self.begin_wave("kubelet").await;
        let in_flight = self.in_flight().await;
        let injected = Instant::now();
        {
            let _restore = Restore("kubelet");
            block_in_place(|| cluster_ctl("stop", "kubelet"));
            tokio::time::sleep(self.scale.outage.saturating_sub(injected.elapsed())).await;
            block_in_place(|| cluster_ctl("start", "kubelet"));
        }
        let healed = Instant::now();
        let note = format!("kubelet down {:.1} s", (healed - injected).as_secs_f64());
        let fault = Fault {
            name: "d. kubelet stopped",
            in_flight,
            injected,
            healed: Some(healed),
            note,
        };
        self.finish_wave(fault, wave, later).await;
    }

    /// e. Cut one front-end replica off the API server for the outage: its readiness must
    /// fail and requests sent straight to it must be refused at once; then heal it.
    pub(super) async fn partition_frontend(&mut self) {
        let (wave, later) = self.begin_wave("partition").await;
        let pods = self.pods(FRONTEND).await;
        let pod = pods[0].clone();
        let name = pod.name_any();
        let pid = container_pid(&pod, "mcp-frontend");
        let pod_ip = pod
            .status
            .as_ref()
            .and_then(|s| s.pod_ip.clone())
            .expect("pod IP");
        let in_flight = self.in_flight().await;
        let injected = Instant::now();
        let partition = Partition::cut(pid, "10.96.0.1:443", &format!("{NODE_IP}:6443"));
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        while api.get(&name).await.is_ok_and(|p| pod_is_ready(&p)) {
            assert!(
                injected.elapsed() < PATIENCE,
                "{name} stayed Ready while cut off"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let unready = injected.elapsed();
        // Straight to the cut-off replica, past the Service.
        let direct = Mcp::new(&format!("http://{pod_ip}:8080/mcp")).with_token(&self.token);
        let mut answers = Vec::new();
        for (method, params) in [
            ("tasks/get", json!({"taskId": wave[0].id})),
            (
                "tools/call",
                json!({"name": "slow_compute", "arguments": {"seconds": 1}}),
            ),
        ] {
            let (mut headers, body) = framed(method, params, true);
            headers.push(("host", NODE_IP.to_owned()));
            let asked = Instant::now();
            let reply = tokio::time::timeout(Duration::from_secs(60), direct.send(&headers, &body))
                .await
                .unwrap_or_else(|_| panic!("{method} to the cut-off replica hung"));
            let took = asked.elapsed();
            assert_eq!(reply.status, 503, "{method}: {}", reply.body);
            assert_eq!(reply.error_code(), Some(-32603), "{}", reply.body);
            assert!(
                reply.error_message().contains("API server unreachable"),
                "{}",
                reply.body
            );
            answers.push(format!("{method} {} ms", took.as_millis()));
        }
        tokio::time::sleep(self.scale.outage.saturating_sub(injected.elapsed())).await;
        assert!(partition.heal(), "could not remove the iptables rules");
        let healed = Instant::now();
        while !api.get(&name).await.is_ok_and(|p| pod_is_ready(&p)) {
            assert!(
                healed.elapsed() < PATIENCE,
                "{name} not Ready after the heal"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let note = format!(
            "{name} unready {:.1} s after the cut; direct requests refused with 503/-32603 in {}; \
             Ready again {:.1} s after the heal",
            unready.as_secs_f64(),
            answers.join(", "),
            healed.elapsed().as_secs_f64()
        );
        let fault = Fault {
            name: "e. front end cut off the API server",
            in_flight,
            injected,
            healed: Some(healed),
            note,
        };
        self.finish_wave(fault, wave, later).await;
    }
}

fn kill9(pid: u32) {
    let out = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .output()
        .expect("kill runs");
    assert!(out.status.success(), "kill -9 {pid}: {}", output_text(&out));
}
