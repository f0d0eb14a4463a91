#!/usr/bin/env python3
"""API server CPU per write, for docs/BENCHMARKS.md ("What a task's writes cost the API server").

Runs against the local cluster (`make cluster-up`) through `kubectl proxy` on loopback, one
request at a time: a server-side apply of a running task's status (as the operator sends it),
a JSON merge patch of the same status, and the create of a suspended Job (no pod), in
alternating rounds. Reports, per kind, the median kube-apiserver and etcd CPU milliseconds per
request (from /proc, so run it on an otherwise idle cluster) and the paired ratio of apply to
merge patch. Leaves two McpTasks and the Jobs in `default`; `make cluster-down` removes them.

Usage: hack/write-cost.py [ROUNDS] [PER_ROUND]
"""
import http.client
import json
import os
import statistics
import subprocess
import sys
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
PER = int(sys.argv[2]) if len(sys.argv) > 2 else 60
PORT = 8099
NS = "default"
TASKS = f"/apis/mcptasks.io/v1alpha1/namespaces/{NS}/mcptasks"
JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"


def pid(name):
    return int(subprocess.check_output(["pgrep", "-x", name]).split()[0])


def cpu_seconds(p):
    fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status(i):
    """A running task's status, its message and checkpoint changed by `i`."""
    at = f"2026-12-02T17:00:{i % 60:02d}Z"
    return {
        "status": "working", "statusMessage": f"fleet: {i} of 55 s", "jobName": "j",
        "observedGeneration": 1, "createdAt": "2026-12-02T17:00:00Z", "lastUpdatedAt": at,
        "expiresAt": "2026-12-02T18:00:00Z",
        "conditions": [
            {"type": "JobCreated", "status": "True", "reason": "Created",
             "message": "Job j created (uid 1234)", "lastTransitionTime": "2026-12-02T17:00:00Z"},
            {"type": "OutputFollowed", "status": "True", "reason": "Followed",
             "message": f"pod p offset {i * 100} hash abc", "lastTransitionTime": at},
        ],
    }


def main():
    proxy = subprocess.Popen(["kubectl", "proxy", f"--port={PORT}"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.5)
        conn = http.client.HTTPConnection("127.0.0.1", PORT)

        def call(method, path, body=None, ctype="application/json"):
            data = json.dumps(body) if body is not None else None
            conn.request(method, path, body=data, headers={"Content-Type": ctype})
            reply = conn.getresponse()
            text = reply.read()
            if reply.status >= 300 and not (method == "DELETE" and reply.status == 404):
                raise SystemExit(f"{method} {path}: {reply.status} {text[:300]!r}")

        for name in ("apply-task", "merge-task"):
            call("DELETE", f"{TASKS}/{name}")
        time.sleep(1)
        for name in ("apply-task", "merge-task"):
            call("POST", TASKS, {"apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask",
                                 "metadata": {"name": name},
                                 "spec": {"tool": "fleet", "owner": "bench", "arguments": {"n": 1}}})

        def apply(i):
            body = {"apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask",
                    "metadata": {"name": "apply-task"}, "status": status(i)}
            call("PATCH", f"{TASKS}/apply-task/status?fieldManager=mcp-task-operator&force=true",
                 body, "application/apply-patch+yaml")

        def merge(i):
            call("PATCH", f"{TASKS}/merge-task/status?fieldManager=mcp-task-operator",
                 {"status": status(i)}, "application/merge-patch+json")

        def job(_):
            call("POST", JOBS, {"apiVersion": "batch/v1", "kind": "Job",
                                "metadata": {"generateName": "write-cost-"},
                                "spec": {"suspend": True, "template": {"spec": {
                                    "restartPolicy": "Never",
                                    "containers": [{"name": "c", "image": "localhost/none:v1"}]}}}})

        kinds = [("status apply", apply), ("status merge patch", merge), ("Job create", job)]
        api, etcd = pid("kube-apiserver"), pid("etcd")
        seen = {k: [] for k, _ in kinds}
        n = 0
        for r in range(ROUNDS):
            for kind, write in kinds if r % 2 == 0 else list(reversed(kinds)):
                a0, e0 = cpu_seconds(api), cpu_seconds(etcd)
                for _ in range(PER):
                    n += 1
                    write(n)
                seen[kind].append(((cpu_seconds(api) - a0) * 1000 / PER,
                                   (cpu_seconds(etcd) - e0) * 1000 / PER))
        for kind, rows in seen.items():
            a = [x[0] for x in rows]
            e = [x[1] for x in rows]
            print(f"{kind:20} kube-apiserver {statistics.median(a):5.2f} ms (min {min(a):.2f}, "
                  f"max {max(a):.2f}); etcd {statistics.median(e):.2f} ms per request")
        pairs = [x[0] / y[0] for x, y in zip(seen["status apply"], seen["status merge patch"])
                 if y[0] > 0]
        print(f"apply / merge patch, paired rounds: median {statistics.median(pairs):.2f} "
              f"(min {min(pairs):.2f}, max {max(pairs):.2f}); {ROUNDS} rounds of {PER}")
    finally:
        proxy.terminate()


if __name__ == "__main__":
    main()
