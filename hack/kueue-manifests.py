#!/usr/bin/env python3
"""Turns Kueue's rendered default install (config/default) into the one the local cluster runs.

Reads the multi-document YAML on stdin, writes it on stdout, changed so that Kueue can never
stand in the way of anything but the Jobs that name a queue (other tests share the cluster):
- integrations: batch/job only; manageJobsWithoutQueueName: false (Kueue's default, made
  explicit): Kueue manages only Jobs labelled kueue.x-k8s.io/queue-name;
- webhooks: only those of Jobs and Kueue's own kinds; the Job webhooks get an objectSelector on
  that label, so the API server never calls Kueue for any other Job (their failurePolicy is
  Fail: an unlabelled Job must not depend on Kueue being up); pods, Deployments and the like
  (Kueue's other integrations) are not intercepted at all;
- no visibility APIService: an aggregated API whose server is down breaks discovery, and with it
  namespace deletion, for everyone;
- the image: IMAGE (argv[1]) from the local containerd, small requests.
"""
import sys

import yaml

IMAGE = sys.argv[1]
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
OWN_KINDS = {"clusterqueues", "localqueues", "cohorts", "resourceflavors", "workloads",
             "workloads/status", "jobs"}

CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
controller:
  groupKindConcurrency:
    Job.batch: 5
    Workload.kueue.x-k8s.io: 5
    LocalQueue.kueue.x-k8s.io: 1
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 1
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 50
  burst: 100
manageJobsWithoutQueueName: false
integrations:
  frameworks:
  - "batch/job"
"""

out = []
for doc in yaml.safe_load_all(sys.stdin):
    if not doc:
        continue
    kind = doc["kind"]
    if kind == "APIService":
        continue
    if kind == "ConfigMap" and "controller_manager_config.yaml" in doc.get("data", {}):
        doc["data"]["controller_manager_config.yaml"] = CONFIG
    if kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        kept = []
        for hook in doc["webhooks"]:
            resources = {r for rule in hook["rules"] for r in rule["resources"]}
            if not resources <= OWN_KINDS:
                continue
            if "jobs" in resources:
                hook["objectSelector"] = {"matchExpressions": [
                    {"key": QUEUE_LABEL, "operator": "Exists"}]}
            kept.append(hook)
        doc["webhooks"] = kept
    if kind == "Deployment":
        spec = doc["spec"]["template"]["spec"]
        for c in spec["containers"]:
            c["image"] = IMAGE
            c["imagePullPolicy"] = "IfNotPresent"
            c["resources"] = {"requests": {"cpu": "50m", "memory": "128Mi"},
                              "limits": {"memory": "512Mi"}}
    out.append(doc)
yaml.safe_dump_all(out, sys.stdout, sort_keys=False)
