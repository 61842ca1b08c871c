#!/bin/sh
# The Kubernetes manifests (deploy/k8s) validate against the API schemas, with no
# unknown field, and agree with the binaries: flags from their --help, DYNPROF_* names
# from the sources, socket and segment paths shared through the same volume, Service
# ports, probes, Secret keys, no hostPID or shareProcessNamespace
# (deploy/validate/validate.mjs).  Then the validator is shown to catch each kind of
# mistake on broken copies.
#
# Needs node (>= 18) and npm; `npm ci` fetches the pinned packages of
# deploy/validate/package-lock.json once per build tree (BUILD/deploy-validate).
set -eu
. "$(dirname "$0")/test_deploy_lib.sh"

# Without node too: no manifest shares a pid namespace (docs/containers.md).
if grep -n -E '^[[:space:]]*(hostPID|shareProcessNamespace):' \
    "$SRC"/deploy/k8s/*.yaml; then
	fail "deploy/k8s shares a pid namespace: dynprof needs none"
fi

# make test installs node and npm (scripts/deps.sh, "node"): without them, a
# failure, not a skip.
command -v node >/dev/null 2>&1 ||
    fail "node is not installed (make deps-test, or scripts/deps.sh with DEPS_EXTRA=node)"
command -v npm >/dev/null 2>&1 ||
    fail "npm is not installed (make deps-test, or scripts/deps.sh with DEPS_EXTRA=node)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || fail "node $major is older than 18"
need_binaries

make_tmp k8s

# The validator and its pinned packages live in the build tree, so the source tree
# stays clean and two build trees never share a node_modules.
V=$BUILD/deploy-validate
mkdir -p "$V"
cp "$SRC/deploy/validate/package.json" "$SRC/deploy/validate/package-lock.json" \
    "$SRC/deploy/validate/validate.mjs" "$V/"
if ! cmp -s "$V/package-lock.json" "$V/node_modules/.dynprof-lock" 2>/dev/null; then
	echo "npm ci in $V"
	if ! (cd "$V" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) \
	    > "$TMP/npm.log" 2>&1; then
		cat "$TMP/npm.log" >&2
		if [ -n "${CI:-}" ]; then
			fail "npm ci failed (CI has the npm registry: this must work)"
		fi
		skip "npm ci failed: no network to the npm registry?"
	fi
	cp "$V/package-lock.json" "$V/node_modules/.dynprof-lock"
fi

write_facts "$TMP/facts.json"
K=$SRC/deploy/k8s
CM="dynprof-train-example/train.py=$SRC/deploy/slurm/train.py"

echo "== the manifests"
node "$V/validate.mjs" --facts "$TMP/facts.json" --configmap-file "$CM" "$K"/*.yaml ||
    fail "deploy/k8s does not validate"

# Each broken copy must be refused with the expected message.
broken()
{
	name=$1 file=$2 expr=$3 want=$4
	mkdir -p "$TMP/$name"
	cp "$K"/*.yaml "$TMP/$name/"
	sed -i "$expr" "$TMP/$name/$file"
	cmp -s "$K/$file" "$TMP/$name/$file" && fail "$name: sed changed nothing"
	if node "$V/validate.mjs" --facts "$TMP/facts.json" --configmap-file "$CM" \
	    "$TMP/$name"/*.yaml > "$TMP/$name.out" 2>&1; then
		cat "$TMP/$name.out"
		fail "$name: accepted"
	fi
	grep -q -- "$want" "$TMP/$name.out" || {
		cat "$TMP/$name.out"
		fail "$name: refused, but not with \"$want\""
	}
	echo "ok: $name: $(grep -m1 -- "$want" "$TMP/$name.out")"
}
echo "== broken copies"
broken typo coordinator.yaml 's/readinessProbe:/readinesProbe:/' 'unknown field'
broken type coordinator.yaml 's/replicas: 1/replicas: one/' 'must be integer'
broken flag agent-daemonset.yaml 's/- --shm-dir$/- --shm-directory/' 'has no flag --shm-directory'
broken env train-job.yaml 's/name: DYNPROF_SHM_DIR/name: DYNPROF_SHMDIR/' 'read by no dynprof'
broken socket train-job.yaml 's|value: /run/dynprof/agent.sock|value: /run/dynprof/agent2.sock|' 'rank socket'
broken volume train-job.yaml 's|path: /run/dynprof$|path: /var/run/dynprof-x|' 'segment directory'
broken memory train-job-sidecar.yaml 's/medium: Memory/medium: ""/' 'medium: Memory'
broken hostpid train-job.yaml 's/^      restartPolicy: Never$/      hostPID: true\n&/' 'hostPID: true'
broken shareprocess train-job-sidecar.yaml 's/^      restartPolicy: Never$/      shareProcessNamespace: true\n&/' 'shareProcessNamespace: true'
broken daemonsetpid agent-daemonset.yaml 's/^      tolerations:$/      hostPID: true\n&/' 'hostPID: true'
broken port coordinator.yaml 's/- 0.0.0.0:7878/- 0.0.0.0:7900/' 'does not reach'
broken probe coordinator.yaml 's|path: /healthz|path: /health|' 'is not /healthz'
broken tls agent-daemonset.yaml 's|/etc/dynprof-tls/ca.crt|/etc/dynprof-x/ca.crt|' 'tls-ca /etc/dynprof-x/ca.crt is not on a Secret volume'
broken secret agent-daemonset.yaml 's/key: agent-token/key: agent-tokn/' 'no key agent-tokn'
broken token train-job-sidecar.yaml 's/change-me-agent-token/other/' 'differs from the coordinator'
broken script train-job.yaml 's/mon.step()  /mon.steps()  /' 'differs from'
echo "PASS"
