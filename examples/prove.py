#!/usr/bin/env python3
"""Runs one example tool as a plain Pod, the way the tool container contract describes, without
the operator, and checks what it prints.

The Pod is the McpTool's template plus what the operator adds: env MCP_TASK_ID, MCP_TOOL_NAME,
MCP_TOOL_ARGUMENTS (and MCP_START_INPUTS with --start-inputs), and a downward-API volume at
/var/run/mcp projecting the pod annotations mcptasks.io/cancel-requested (file cancel-requested,
"" at start) and mcptasks.io/input-responses (file input-responses, "{}" at start). Cancel and
answers are simulated by patching those annotations, as the operator does.

  prove.py MANIFEST --tool MCP_NAME --args JSON [--start-inputs JSON]
           [--answer KEY=JSON]... [--cancel-after-status N]
           [--expect KINDS] [--terminal result|error|none] [--exit-code N] [--contains TEXT]

--answer: once the tool has printed an input message, the answers are added to the
input-responses annotation one at a time, a second apart (so several --answer flags test partial
answers). --cancel-after-status N: the cancel annotation is set after the N-th status message
(0: as soon as the container runs). Needs kubectl and KUBECONFIG; the namespace is -n (default
examples-dev). Exits non-zero when a check fails.
"""
import argparse
import datetime
import json
import os
import re
import secrets
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CANCEL = "mcptasks.io/cancel-requested"
INPUT = "mcptasks.io/input-responses"


def kubectl(*args, input=None, check=True):
    out = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True)
    if check and out.returncode != 0:
        sys.exit(f"kubectl {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def load_tool(path, mcp_name):
    with open(path) as f:
        for doc in yaml.safe_load_all(f):
            if doc and doc.get("kind") == "McpTool":
                name = doc["spec"].get("name") or doc["metadata"]["name"]
                if mcp_name in (None, name):
                    return name, doc
    sys.exit(f"{path}: no McpTool named {mcp_name}")


def build_pod(tool, mcp_name, task_id, arguments, start_inputs):
    template = tool["spec"]["template"]
    meta = dict(template.get("metadata") or {})
    spec = json.loads(json.dumps(template["spec"]))
    spec["restartPolicy"] = "Never"
    spec.setdefault("volumes", []).append({
        "name": "mcp-task",
        "downwardAPI": {"items": [
            {"path": "cancel-requested", "fieldRef": {"fieldPath": f"metadata.annotations['{CANCEL}']"}},
            {"path": "input-responses", "fieldRef": {"fieldPath": f"metadata.annotations['{INPUT}']"}},
        ]},
    })
    containers = spec["containers"]
    c = containers[0] if len(containers) == 1 else next(x for x in containers if x["name"] == "tool")
    env = [{"name": "MCP_TASK_ID", "value": task_id},
           {"name": "MCP_TOOL_NAME", "value": mcp_name},
           {"name": "MCP_TOOL_ARGUMENTS", "value": arguments}]
    if start_inputs is not None:
        env.append({"name": "MCP_START_INPUTS", "value": start_inputs})
    c["env"] = (c.get("env") or []) + env
    c.setdefault("volumeMounts", []).append({"name": "mcp-task", "mountPath": "/var/run/mcp", "readOnly": True})
    labels = dict(meta.get("labels") or {})
    labels["app.kubernetes.io/part-of"] = "mcp-task-operator-examples-prove"
    annotations = dict(meta.get("annotations") or {})
    annotations.update({CANCEL: "", INPUT: "{}"})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": task_id, "labels": labels, "annotations": annotations},
            "spec": spec}


def annotate(ns, pod, key, value):
    patch = json.dumps({"metadata": {"annotations": {key: value}}})
    kubectl("-n", ns, "patch", "pod", pod, "--type=merge", "-p", patch)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("--tool")
    ap.add_argument("--args", default="{}")
    ap.add_argument("--start-inputs")
    ap.add_argument("--answer", action="append", default=[])
    ap.add_argument("--cancel-after-status", type=int)
    ap.add_argument("--cancel-after-input", action="store_true")
    ap.add_argument("--expect")
    ap.add_argument("--terminal")
    ap.add_argument("--exit-code", type=int, default=0)
    ap.add_argument("--contains")
    ap.add_argument("-n", "--namespace", default="examples-dev")
    a = ap.parse_args()
    ns = a.namespace
    mcp_name, tool = load_tool(a.manifest, a.tool)
    task_id = f"prove-{mcp_name.replace('_', '-')}-{secrets.token_hex(3)}"
    pod = build_pod(tool, mcp_name, task_id, a.args, a.start_inputs)
    print(f"== {mcp_name} args={a.args} pod={ns}/{task_id}")
    t0 = time.monotonic()
    kubectl("-n", ns, "create", "-f", "-", input=json.dumps(pod))
    while True:
        phase = kubectl("-n", ns, "get", "pod", task_id, "-o", "jsonpath={.status.phase}")
        if phase in ("Running", "Succeeded", "Failed"):
            break
        if time.monotonic() - t0 > 60:
            sys.exit(f"pod still {phase} after 60 s")
        time.sleep(0.2)
    print(f"   container started after {time.monotonic() - t0:.1f} s")
    answers, pending, statuses, cancel_at, answered_at = {}, list(a.answer), 0, None, None
    if a.cancel_after_status == 0:
        cancel_at = time.monotonic()
        annotate(ns, task_id, CANCEL, datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        print("   cancel requested at start")
    log = subprocess.Popen(["kubectl", "-n", ns, "logs", "-f", task_id], stdout=subprocess.PIPE, text=True)
    lines = []
    for line in log.stdout:
        lines.append(line.rstrip("\n"))
        if not re.match(r'^\s*\{\s*"mcp"', line):
            continue
        kind = json.loads(line).get("mcp")
        if kind == "status":
            statuses += 1
            if a.cancel_after_status and statuses == a.cancel_after_status and cancel_at is None:
                cancel_at = time.monotonic()
                annotate(ns, task_id, CANCEL, datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
                print(f"   cancel requested after status {statuses}: {line.strip()}")
        if kind == "input" and a.cancel_after_input and cancel_at is None:
            cancel_at = time.monotonic()
            annotate(ns, task_id, CANCEL, datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
            print("   cancel requested while the tool waits for input")
        if kind == "input":
            while pending:
                key, _, value = pending.pop(0).partition("=")
                answers[key] = json.loads(value)
                annotate(ns, task_id, INPUT, json.dumps(answers, separators=(",", ":")))
                answered_at = time.monotonic()
                print(f"   answered {key}: input-responses = {json.dumps(answers)}")
                if pending:
                    time.sleep(1)
    log.wait()
    while True:
        status = json.loads(kubectl("-n", ns, "get", "pod", task_id, "-o", "json"))
        st = status["status"].get("containerStatuses", [{}])[0].get("state", {})
        if "terminated" in st:
            break
        time.sleep(0.2)
    end = time.monotonic()
    code = st["terminated"]["exitCode"]
    output = kubectl("-n", ns, "logs", task_id)
    print(f"   exit code {code} after {end - t0:.1f} s")
    if cancel_at is not None:
        print(f"   stopped {end - cancel_at:.1f} s after the cancel request")
    if answered_at is not None:
        print(f"   finished {end - answered_at:.1f} s after the last answer")
    check = [sys.executable, os.path.join(HERE, "check-output.py")]
    if a.expect:
        check += ["--expect", a.expect]
    if a.terminal:
        check += ["--terminal", a.terminal]
    res = subprocess.run(check, input=output, capture_output=True, text=True)
    print("\n".join("   " + l for l in res.stdout.splitlines()))
    ok = res.returncode == 0
    if code != a.exit_code:
        print(f"   FAIL  exit code {code}, expected {a.exit_code}")
        ok = False
    if a.contains and a.contains not in output:
        print(f"   FAIL  output lacks {a.contains!r}")
        ok = False
    kubectl("-n", ns, "delete", "pod", task_id, "--wait=false")
    print("   PASS" if ok else "   FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
