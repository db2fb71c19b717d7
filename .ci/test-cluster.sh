#!/usr/bin/env bash
# make test-cluster: bring up the one-node SLURM cluster (.ci/slurm.sh), run the cluster
# tests (tests/test_cluster.py) against it, stop it again. Where the cluster cannot run here
# (not root, no apt), the tests are still collected and skip, giving the reason.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTEST=(.venv/bin/python -m pytest -q -m cluster tests/test_cluster.py)

log=$(mktemp)
trap 'rm -f "$log"' EXIT
env_line=$(.ci/slurm.sh up 2>"$log")
rc=$?
cat "$log" >&2
if [ "$rc" -eq 3 ]; then
    reason=$(grep -o 'cannot start a SLURM cluster: .*' "$log" | tail -1)
    UQX_CLUSTER_SKIP="${reason:-cannot start a SLURM cluster here}" "${PYTEST[@]}"
    exit $?
elif [ "$rc" -ne 0 ]; then
    echo "test-cluster: .ci/slurm.sh up failed (status $rc)" >&2
    .ci/slurm.sh down
    exit "$rc"
fi
export "${env_line?}"   # SLURM_CONF=...
trap '.ci/slurm.sh down; rm -f "$log"' EXIT
UQX_CLUSTER=1 "${PYTEST[@]}"
