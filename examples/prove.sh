#!/usr/bin/env bash
# Proves every example tool against the local cluster without the operator: each case runs the
# tool's image as a plain Pod built from its McpTool template plus the contract (prove.py), drives
# cancel and input through the pod annotations, and checks stdout (check-output.py).
#   examples/prove.sh [CASE-PATTERN]   e.g. examples/prove.sh confirm
# Needs the cluster (KUBECONFIG) and the images (examples/build-images.sh). Uses the namespace
# examples-dev, created and deleted here (MTO_KEEP_NS=1 keeps it).
set -uo pipefail
cd "$(dirname "$0")" || exit
NS=examples-dev
PATTERN=${1:-}
kubectl get ns "$NS" >/dev/null 2>&1 || kubectl create ns "$NS" >/dev/null
pass=0
fail=0
failed=()
run() {
  local name=$1
  shift
  [[ -z $PATTERN || $name == *$PATTERN* ]] || return 0
  echo "### $name"
  if ./prove.py -n "$NS" "$@"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    failed+=("$name")
  fi
}
RR=restock-report/mcptool.yaml
CT=conformance/mcptools.yaml
WC=wrap-cli/mcptool.yaml

run restock-default "$RR" --args '{}' --expect status,result --terminal result \
  --contains '13 of 64 SKUs have fewer than 10 units: SKU-0004 (9), SKU-0008 (7)'
run restock-threshold "$RR" --args '{"threshold":5,"delayMs":0}' --expect status,result --terminal result \
  --contains '"structuredContent":{"threshold":5,"recounted":64,"lowStock":[{"sku":"SKU-0016","count":3},{"sku":"SKU-0020","count":1},{"sku":"SKU-0039","count":4},{"sku":"SKU-0043","count":2},{"sku":"SKU-0047","count":0}]}'
run restock-cancel "$RR" --args '{"delayMs":300}' --cancel-after-status 5 --expect status --terminal none \
  --contains 'cancelled after recounting'
run restock-bad-args "$RR" --args '{"threshold":"ten"}' --terminal none --exit-code 2 \
  --contains 'restock-report: invalid argument threshold: expected an integer from 0 to 1000, got "ten"'

run greet "$CT" --tool greet --args '{"name":"World"}' --expect result --terminal result \
  --contains '"text":"Hello, World!"'
run slow-compute "$CT" --tool slow_compute --args '{"seconds":2,"label":"lifecycle-create"}' \
  --expect status,result --terminal result --contains 'Computed lifecycle-create in 2 s'
run slow-compute-instant "$CT" --tool slow_compute --args '{"seconds":0,"label":"instant"}' \
  --expect result --terminal result --contains 'Computed instant in 0 s'
run slow-compute-cancel "$CT" --tool slow_compute --args '{"seconds":60,"label":"lifecycle-cancel"}' \
  --cancel-after-status 2 --expect status --terminal none --contains 'cancelled: lifecycle-cancel stopped'
run slow-compute-cancel-at-start "$CT" --tool slow_compute --args '{"seconds":60,"label":"early"}' \
  --cancel-after-status 0 --terminal none --contains 'cancelled: early stopped'
run failing-job "$CT" --tool failing_job --args '{}' --expect status --terminal none --exit-code 1 \
  --contains 'failing_job: the job failed on purpose'
run protocol-error-job "$CT" --tool protocol_error_job --args '{}' --expect error --terminal error \
  --contains '"code":-32603'
run confirm-delete-accept "$CT" --tool confirm_delete --args '{"filename":"mrtr-resume.txt"}' \
  --answer 'confirm-1={"action":"accept","content":{"confirm":true}}' \
  --expect input,result --terminal result --contains '"text":"Deleted mrtr-resume.txt"'
run confirm-delete-decline "$CT" --tool confirm_delete --args '{"filename":"keep.txt"}' \
  --answer 'confirm-1={"action":"decline"}' \
  --expect input,result --terminal result --contains 'Kept keep.txt: deletion not confirmed (action: decline)'
run confirm-delete-cancel "$CT" --tool confirm_delete --args '{"filename":"mrtr-input.txt"}' \
  --cancel-after-input --expect input,status --terminal none \
  --contains 'cancelled: no answer to the delete confirmation'
run multi-input-partial "$CT" --tool multi_input --args '{}' \
  --answer 'name-1={"action":"accept","content":{"name":"partial-1","confirm":true}}' \
  --answer 'confirm-1={"action":"accept","content":{"name":"partial-2","confirm":true}}' \
  --expect input,result --terminal result --contains '"text":"Hello, partial-1! Go on: true."'
run test-tool-with-task "$CT" --tool test_tool_with_task --args '{}' \
  --start-inputs '{"user_name":{"action":"accept","content":{"name":"Alice"}}}' \
  --expect status,result --terminal result --contains '"text":"Hello, Alice! The task finished for you."'

run text-stats "$WC" --args '{"text":"hello world"}' --terminal none \
  --contains 'sha256: b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9'
run text-stats-escapes "$WC" --args '{"text":"tab\there\nline \"two\" \\ end\n"}' --terminal none \
  --contains 'lines, words, bytes:        2         6        26'
run text-stats-no-text "$WC" --args '{}' --terminal none --exit-code 2 \
  --contains 'text_stats: the arguments hold no "text" string'

echo "### $pass passed, $fail failed ${failed[*]:-}"
[ -n "${MTO_KEEP_NS:-}" ] || kubectl delete ns "$NS" --wait=false >/dev/null
[ "$fail" -eq 0 ]
