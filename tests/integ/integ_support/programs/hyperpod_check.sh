#!/bin/bash
# training_hyperpod's check, run on the cluster's Slurm controller as its controller_program (a
# transient systemd unit started by the lifecycle script, with the training profile loaded).
#
# 1. sinfo: waits until the partition shows a node idle (deep health checks hold a new node in a
#    maintenance reservation first) and records the node line.
# 2. A few training steps: submits the cluster's own sbatch script (the suite renders it with
#    HyperPodTrainingCluster.sbatch_script: one task per node through slurm-step.sh and the shared
#    launcher, in the cluster's job image through Pyxis), whose command trains a small model on every
#    NeuronCore with torch-neuronx (train_steps.py: `train_ok steps=... first_loss=... last_loss=...`)
#    and saves it, fsync'd, into the checkpoint store (`checkpoint_ok <path> <sha256>`); `sbatch --wait`
#    returns the job's exit code.
# 3. The report: REPORT_DIR/report.json on the checkpoint store, written last and atomically, which
#    the suite's reader Lambda (mounting the same store) asserts on. "ok" is true only when every check
#    passed; any failure still writes a report that says which, so the assertion fails with the reason.
#
# Settings (controller_settings, in $CDK_NEURON_CONTROLLER_SETTINGS): PARTITION, REPORT_DIR,
# JOB_NAME and JOB_SCRIPT_B64 (the sbatch script, base64; its output is JOB_NAME-<job id>.out),
# WAIT_SECONDS (how long sinfo may take), POLL_SECONDS.
set -uo pipefail

# shellcheck disable=SC1090
. "${CDK_NEURON_CONTROLLER_SETTINGS:?the lifecycle script sets it}"
: "${PARTITION:?}" "${REPORT_DIR:?}" "${JOB_NAME:?}" "${JOB_SCRIPT_B64:?}" "${WAIT_SECONDS:?}" "${POLL_SECONDS:?}"

log() { printf 'cdk-neuron-integ: %s\n' "$*" >&2; }

report() { # report <ok> <stage> <detail>: REPORT_DIR/report.json, replaced atomically
    local ok=$1 stage=$2 detail=$3
    mkdir -p "${REPORT_DIR}" || return 1
    python3 - "${ok}" "${stage}" "${detail}" "${sinfo_line:-}" "${job_id:-}" "${job_exit:-}" \
        "${REPORT_DIR}/report.json" <<'PY'
import json, os, sys
ok, stage, detail, sinfo, job_id, job_exit, path = sys.argv[1:8]
body = {"ok": ok == "true", "stage": stage, "detail": detail[-2000:], "sinfo": sinfo,
        "job_id": job_id, "job_exit": job_exit}
tmp = path + ".tmp"
with open(tmp, "w") as out:
    json.dump(body, out, sort_keys=True)
    out.flush()
    os.fsync(out.fileno())
os.replace(tmp, path)
PY
}

fail() {
    log "FAILED at $1: $2"
    report false "$1" "$2"
    exit 1
}

# 1. sinfo shows the worker, idle.
deadline=$((SECONDS + WAIT_SECONDS))
sinfo_line=""
while :; do
    sinfo_line="$(sinfo --noheader --partition "${PARTITION}" --states idle --format '%N %t %c %m' 2>/dev/null | head -n 1)"
    [ -n "${sinfo_line}" ] && break
    ((SECONDS < deadline)) || fail sinfo "no idle node in partition ${PARTITION} after ${WAIT_SECONDS} s: $(sinfo 2>&1 | tr '\n' ';')"
    sleep "${POLL_SECONDS}"
done
log "sinfo: ${sinfo_line}"

# 2. The job, through the cluster's own sbatch script.
mkdir -p "${REPORT_DIR}" || fail setup "cannot create ${REPORT_DIR}"
cd "${REPORT_DIR}" || fail setup "cannot enter ${REPORT_DIR}"
printf '%s' "${JOB_SCRIPT_B64}" | base64 -d >job.sh || fail setup "JOB_SCRIPT_B64 is not base64"
job_exit=0
job_id="$(sbatch --parsable --wait job.sh)" || job_exit=$?
job_id="${job_id%%;*}"
if ! output="$(cat "${JOB_NAME}-${job_id}.out" 2>&1)"; then
    output="(no job output ${JOB_NAME}-${job_id}.out: ${output})"
fi
((job_exit == 0)) || fail job "sbatch --wait: job ${job_id} exited ${job_exit}: ${output}"
grep -q '^train_ok ' <<<"${output}" || fail training "the job reported no training steps: ${output}"
grep -q '^checkpoint_ok ' <<<"${output}" || fail checkpoint "the job reported no checkpoint: ${output}"
read -r _ checkpoint expected <<<"$(grep '^checkpoint_ok ' <<<"${output}" | tail -n 1)"
actual="$(sha256sum "${checkpoint}" 2>/dev/null | cut -d ' ' -f 1)"
[ -n "${actual}" ] && [ "${actual}" = "${expected}" ] ||
    fail checkpoint "${checkpoint} reads back as '${actual}', the job wrote ${expected}"

# 3. Every check passed.
report true passed "$(grep '^train_ok ' <<<"${output}" | tail -n 1); checkpoint ${checkpoint} ${actual}"
log "all checks passed"
