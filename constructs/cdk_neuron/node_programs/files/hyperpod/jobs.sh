#!/bin/bash
# cdk-neuron HyperPod job commands: run on the Slurm controller by the cdk-neuron CLI (submit, status,
# logs, cancel, terminate, list), one Session Manager session each.
#
# How it gets here: the CLI starts a session on the controller with the document
# AWS-StartNonInteractiveCommand, whose agent runs the command with `sh -c` on a pseudo-terminal
# (amazon-ssm-agent, agent/session/shell/shell_unix.go). That command is
#     CDK_NEURON_SLURM_TIMEOUT=<s> bash -c "$(printf %s <base64 of this file> | base64 -d)" jobs <action> <args>
# where every argument is a word of [A-Za-z0-9+/=_.-] (job ids, state names, base64): nothing in it
# is interpreted by sh, SSM or bash. The training command the user gave travels inside the base64 of
# the sbatch script and is decoded to a file here, never re-parsed by a shell on the way.
#
# Output protocol (the CLI parses it; anything else is shown only when something fails):
#     cdk-neuron:begin
#     cdk-neuron:<record>|<field>|...      one line per record
#     cdk-neuron:data                       (logs) the bytes of the log follow, to the end marker
#     cdk-neuron:end|<exit status>          printed on exit, whatever happened
# Records: `submitted|<job id>|<output file>|<user>`, `job|<source>|<line>` (source squeue, scontrol or sacct, the line as
# that tool prints it), `unknown|<job id>`, `log|<path>|<from byte>|<to byte>|<size>`,
# `log-missing|<path>|<batch host>`, `cancelled|<job id>`, `note|<text>`.
set -euo pipefail

# HyperPod installs Slurm under /opt/slurm; a non-login `sh -c` has no PATH to it.
PATH="/opt/slurm/bin:${PATH}"
export PATH
SLURM_TIMEOUT="${CDK_NEURON_SLURM_TIMEOUT:?the cdk-neuron CLI sets it (cdk_neuron.timeouts)}"
# The training environment the lifecycle script installs (CHECKPOINT_DIR, the plan's degrees).
PROFILE="${CDK_NEURON_ROOT:-}/etc/profile.d/cdk-neuron-training.sh"
# At most this many bytes of a log per call: a session carries text, not files.
LOG_CHUNK=262144
JOB_FORMAT='%i|%T|%r|%D|%N|%V|%S|%e|%j'
SACCT_FIELDS='JobID,State,Reason,NNodes,NodeList,Submit,Start,End,ExitCode,JobName'

record() {
    local IFS='|'
    printf 'cdk-neuron:%s\n' "$*"
}

fail() {
    record error "$*"
    exit 1
}

slurm() { timeout "${SLURM_TIMEOUT}" "$@"; }

# Where job output goes (LOG_DIR): the checkpoint store when this node mounts one (every node and
# the controller see it), else /tmp, the one directory every node has: Slurm opens the output file
# on the node that runs the batch step, before the script runs, and fails the job if its directory
# is missing there (the file is then on that node, and lost when it reboots).
set_log_dir() {
    if [ -r "${PROFILE}" ]; then
        # shellcheck disable=SC1090
        . "${PROFILE}"
    fi
    if [ -n "${CHECKPOINT_DIR:-}" ] && mountpoint -q "${CDK_NEURON_ROOT:-}${CHECKPOINT_DIR}"; then
        LOG_DIR="${CDK_NEURON_ROOT:-}${CHECKPOINT_DIR}/.cdk-neuron/jobs"
    else
        LOG_DIR="${CDK_NEURON_ROOT:-}/tmp"
    fi
    mkdir -p "${LOG_DIR}" || fail "cannot create ${LOG_DIR}"
}

# submit <base64 of the sbatch script>
submit() {
    local script_b64=$1 user=$2 script job_id
    local -a as_user=()
    set_log_dir
    # A session runs as root unless Session Manager's Run As names a user; jobs then run as `user`
    # (HyperPod's Slurm image has `ubuntu`), never as root unless asked for by name.
    if [ "$(id -u)" = 0 ] && [ "${user}" != root ]; then
        id -u "${user}" >/dev/null 2>&1 || fail "no OS user ${user} on the controller: pass --as-user with one that exists"
        as_user=(runuser -u "${user}" --)
    fi
    script=$(mktemp "${LOG_DIR}/submit-XXXXXX.sbatch") || fail "cannot write in ${LOG_DIR}"
    printf '%s' "${script_b64}" | base64 -d >"${script}" || fail "the sbatch script is not valid base64"
    # Output on the shared store when there is one (see set_log_dir); the job starts in that directory.
    # sbatch reads the script on stdin, opened here: the job's user needs no access to this file.
    if ! job_id=$(cd "${LOG_DIR}" && slurm "${as_user[@]}" sbatch --parsable --output="${LOG_DIR}/cdk-neuron-%j.out" <"${script}"); then
        rm -f "${script}"
        fail "sbatch refused the job (its message is above)"
    fi
    rm -f "${script}"
    # --parsable prints "<id>" or "<id>;<cluster>".
    job_id=${job_id%%;*}
    record submitted "${job_id}" "${LOG_DIR}/cdk-neuron-${job_id}.out" "${user}"
}

# status <job id>: what Slurm still knows, most detailed first (scontrol forgets a job MinJobAge
# seconds after it ends; sacct answers only where accounting is configured).
status() {
    local id=$1 line
    if line=$(slurm scontrol --oneliner show job "${id}" 2>/dev/null) && [ -n "${line}" ]; then
        record job scontrol "${line}"
    elif line=$(slurm sacct --noheader --parsable2 --allocations --jobs "${id}" --format "${SACCT_FIELDS}" 2>/dev/null) &&
        [ -n "${line}" ]; then
        record job sacct "${line}"
    else
        record unknown "${id}"
    fi
}

# logs <job id> <from byte>: the job as scontrol knows it (when it does), and its output file from
# that offset, at most LOG_CHUNK bytes.
logs() {
    local id=$1 from=$2 line path="" host="" size to
    if line=$(slurm scontrol --oneliner show job "${id}" 2>/dev/null) && [ -n "${line}" ]; then
        record job scontrol "${line}"
        path=$(printf '%s\n' "${line}" | tr ' ' '\n' | sed -n 's/^StdOut=//p')
        host=$(printf '%s\n' "${line}" | tr ' ' '\n' | sed -n 's/^BatchHost=//p')
    fi
    if [ -z "${path}" ]; then
        set_log_dir
        path="${LOG_DIR}/cdk-neuron-${id}.out"
    fi
    if [ ! -r "${path}" ]; then
        record log-missing "${path}" "${host}"
        return 0
    fi
    size=$(stat -c %s "${path}") || fail "cannot stat ${path}"
    to=$((from + LOG_CHUNK))
    if ((to > size)); then to=${size}; fi
    if ((from > to)); then from=${to}; fi
    record log "${path}" "${from}" "${to}" "${size}"
    printf 'cdk-neuron:data\n'
    # Exactly the bytes [from, to): the file may grow meanwhile (GNU dd, as on HyperPod's Ubuntu).
    dd if="${path}" iflag=skip_bytes,count_bytes skip="${from}" count="$((to - from))" status=none ||
        fail "cannot read ${path}"
}

# cancel <job id>: only while it is pending (the CLI checked; a job that started since stays).
cancel() {
    slurm scancel --state=PENDING "$1" || fail "scancel --state=PENDING $1 failed"
    record cancelled "$1"
}

# terminate <job id>: in any state; every step of every node is signalled.
terminate() {
    slurm scancel "$1" || fail "scancel $1 failed"
    record cancelled "$1"
}

# list <states|all|active>: squeue's jobs, and with `all` what sacct remembers of the last 7 days.
list() {
    local states=$1 line
    local -a filter=()
    case "${states}" in
        active) ;;
        all) filter=(--states=all) ;;
        *) filter=("--states=${states}") ;;
    esac
    while IFS= read -r line; do
        if [ -n "${line}" ]; then record job squeue "${line}"; fi
    done < <(slurm squeue --noheader "${filter[@]}" --format "${JOB_FORMAT}" ||
        printf 'cdk-neuron:error|squeue failed\n')
    if [ "${states}" = all ]; then
        if ! slurm sacct --noheader --parsable2 --allocations --starttime now-7days \
            --format "${SACCT_FIELDS}" >"${TMPDIR:-/tmp}/cdk-neuron-sacct.$$" 2>&1; then
            record note "sacct: $(head -n 1 "${TMPDIR:-/tmp}/cdk-neuron-sacct.$$")"
        else
            while IFS= read -r line; do
                if [ -n "${line}" ]; then record job sacct "${line}"; fi
            done <"${TMPDIR:-/tmp}/cdk-neuron-sacct.$$"
        fi
        rm -f "${TMPDIR:-/tmp}/cdk-neuron-sacct.$$"
    fi
}

finish() {
    local status=$?
    printf '\ncdk-neuron:end|%s\n' "${status}"
}

main() {
    local action=${1:-}
    trap finish EXIT
    printf 'cdk-neuron:begin\n'
    case "${action}" in
        submit) [ $# -eq 3 ] || fail "usage: submit SCRIPT_BASE64 USER" ;;
        status | cancel | terminate) [ $# -eq 2 ] || fail "usage: ${action} JOB_ID" ;;
        logs) [ $# -eq 3 ] || fail "usage: logs JOB_ID FROM_BYTE" ;;
        list) [ $# -eq 2 ] || fail "usage: list STATES" ;;
        *) fail "unknown action '${action}'" ;;
    esac
    shift
    "${action}" "$@"
}

main "$@"
