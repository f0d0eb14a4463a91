# The script of the chart's `helm test` pod for the admission policies
# (templates/tests/admission-policy.yaml): as a ServiceAccount that may create pods and Jobs in
# the release namespace, it asks the API server (dry run: nothing is stored) to create a plain
# pod, which is admitted, then a pod claiming a Job as its controller and a Job carrying the
# operator's labels, which the release's policies must refuse. Settings come from the
# environment (NAMESPACE, POD_POLICY, JOB_POLICY); nothing in it is evaluated as shell code.
set -eu
api="https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
token=$(cat /var/run/mto-api/token)

fail() { echo "FAIL: $*"; exit 1; }

# create PATH NAME BODY: a dry-run POST; the answer, then its HTTP status on the last line.
create() {
  curl -sS --max-time 20 --cacert /var/run/mto-api/ca.crt -o - -w '\n%{http_code}' \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    --data "$3" "$api$1?dryRun=All&fieldManager=helm-test"
}
# A pod the "restricted" Pod Security level admits, so that only the policies can refuse it.
spec='"spec":{"restartPolicy":"Never","securityContext":{"runAsNonRoot":true,"runAsUser":65532,"seccompProfile":{"type":"RuntimeDefault"}},"containers":[{"name":"c","image":"helm-test","securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]}'
pods="/api/v1/namespaces/$NAMESPACE/pods"
jobs="/apis/batch/v1/namespaces/$NAMESPACE/jobs"

answer=$(create "$pods" plain "{\"metadata\":{\"name\":\"helm-test-plain\"},$spec}")
code=$(echo "$answer" | tail -n 1)
echo "a plain pod: HTTP $code"
[ "$code" = 201 ] || fail "a plain pod was not admitted (HTTP $code): $answer"

# refused WHAT PATH BODY POLICY: the request must be refused by policy POLICY.
refused() {
  answer=$(create "$2" x "$3")
  code=$(echo "$answer" | tail -n 1)
  echo "$1: HTTP $code"
  [ "$code" = 403 ] || fail "$1 was not refused (HTTP $code): $answer"
  echo "$answer" | grep -q "ValidatingAdmissionPolicy '$4'" ||
    fail "$1 was refused, but not by $4: $answer"
}
owner='"ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"helm-test","uid":"00000000-0000-0000-0000-000000000000","controller":true}]'
refused "a pod claiming a Job as its controller" "$pods" \
  "{\"metadata\":{\"name\":\"helm-test-claim\",$owner},$spec}" "$POD_POLICY"
refused "a Job with the operator's labels" "$jobs" \
  "{\"metadata\":{\"name\":\"helm-test-job\",\"labels\":{\"app.kubernetes.io/managed-by\":\"mcp-task-operator\"}},\"spec\":{\"template\":{$spec}}}" \
  "$JOB_POLICY"
echo "PASS: the admission policies refuse pods and Jobs that would speak for a task"
