#!/usr/bin/env bash
# Writes the static PKI of the local cluster into DIR: one CA, serving and client certificates
# for every component, and the service-account signing key pair. usage: pki.sh DIR
set -euo pipefail
. "$(dirname "$0")/versions.sh"
D=${1:?pki dir}
mkdir -p "$D"
cd "$D"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
  -subj "/CN=mcp-task-operator-local-ca" 2>/dev/null

# sign NAME CN O SAN EKU
sign() {
  local name=$1 cn=$2 o=$3 san=$4 eku=$5
  openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" \
    -subj "/CN=$cn${o:+/O=$o}" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ -n "$san" ] && echo "subjectAltName=$san"
  } > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$name.crt" \
    -days 3650 -extfile "$name.ext" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}
sign apiserver kube-apiserver "" "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$NODE_IP,IP:10.96.0.1" serverAuth
sign admin admin system:masters "" clientAuth
sign kcm system:kube-controller-manager "" "" clientAuth
sign scheduler system:kube-scheduler "" "" clientAuth
sign kube-proxy system:kube-proxy "" "" clientAuth
sign kubelet "system:node:$NODE_NAME" system:nodes "" clientAuth
sign kubelet-serving "system:node:$NODE_NAME" system:nodes "DNS:$NODE_NAME,DNS:localhost,IP:127.0.0.1,IP:$NODE_IP" serverAuth
sign apiserver-kubelet-client kube-apiserver-kubelet-client system:masters "" clientAuth
# The image and chart registry on loopback (hack/registry.sh): TLS like a real registry, so that
# buildah, skopeo, helm and containerd talk to it without insecure flags.
sign registry localhost "" "DNS:localhost,IP:127.0.0.1" serverAuth
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
chmod 600 ./*.key
