# shellcheck shell=bash
# cdk-neuron: the functions every node program shares. Sourced, never run.
#
# Every step either succeeds or stops its program with a message that names the step: no program
# hides a failure behind `|| true`. Where an AWS answer means "nothing to do" (a lifecycle action
# that is no longer pending, a stack that is not waiting for signals), the caller matches exactly
# that answer and treats only it as success.

# Where user data writes each node's settings (read by the programs that source this file). The tests
# run the programs with CDK_NEURON_ROOT set to a scratch directory.
# shellcheck disable=SC2034
CDK_NEURON_ETC="${CDK_NEURON_ROOT:-}/etc/cdk-neuron"

log() { printf 'cdk-neuron[%s]: %s\n' "${CDK_NEURON_PROGRAM:-node}" "$*" >&2; }

die() {
    log "FAILED: $*"
    exit 1
}

# retry <attempts> <command...>: run until it succeeds, waiting 5, 10, 15 ... seconds in between.
retry() {
    local attempts=$1 n
    shift
    for ((n = 1; n <= attempts; n++)); do
        "$@" && return 0
        if ((n < attempts)); then
            log "attempt ${n}/${attempts} of '$1' failed; retrying"
            sleep $((n * 5))
        fi
    done
    return 1
}

# Instance metadata through IMDSv2 (every launch template requires tokens). Each request gives up after
# 2 s, and the read is tried 5 times, 1 s apart: one dropped or throttled request is not a failure
# (the service throttles queries per instance: "Query throttling", Instance Metadata Service, Amazon
# EC2 User Guide).
imds() {
    local token attempt
    for ((attempt = 1; attempt <= 5; attempt++)); do
        if token=$(curl -sSf --max-time 2 -X PUT 'http://169.254.169.254/latest/api/token' \
            -H 'X-aws-ec2-metadata-token-ttl-seconds: 300') &&
            curl -sSf --max-time 2 -H "X-aws-ec2-metadata-token: ${token}" "http://169.254.169.254/latest/$1"; then
            return 0
        fi
        ((attempt < 5)) && sleep 1
    done
    return 1
}

# load_settings <file>...: the KEY='value' files that user data writes (values are shell-quoted).
load_settings() {
    local file
    for file in "$@"; do
        [ -r "${file}" ] || die "missing settings file ${file}"
        # shellcheck disable=SC1090
        . "${file}"
    done
}

# require <NAME>...: every named setting is set and not empty.
require() {
    local name
    for name in "$@"; do
        [ -n "${!name:-}" ] || die "setting ${name} is empty"
    done
}

# verify_sha256 <file> <hex>: the file's SHA-256 is exactly <hex>.
verify_sha256() {
    local actual
    actual=$(sha256sum "$1" | cut -d ' ' -f 1)
    if [ "${actual}" != "$2" ]; then
        log "checksum of $1 is ${actual}, expected $2"
        return 1
    fi
}

# ensure_command <command> <package>: install <package> from the Amazon Linux repositories (in S3,
# reached like the bundle) when <command> is not on this AMI. Every command a node program runs is
# either on the AMI or installed this way (cdk_neuron.contracts.ami records which, and why).
ensure_command() {
    command -v "$1" >/dev/null 2>&1 && return 0
    retry 3 dnf install -y -q "$2" || {
        log "cannot install $2 (for $1)"
        return 1
    }
}

# check_neuron_devices <count> <wait-seconds>: the Neuron driver shows at least <count> devices
# (/dev/neuron0 ...; it creates one per chip as it loads, so wait up to <wait-seconds> for them),
# then neuron-ls, which opens each through the driver, succeeds. Jobs and replicas are given
# /dev/neuronN by path, so a node that lacks one must not take work. neuron-ls comes with the AMI's
# aws-neuronx-tools in /opt/aws/neuron/bin (cdk_neuron.contracts.ami).
check_neuron_devices() {
    local expected=$1 wait=$2 waited=0 devices found tool output
    while :; do
        devices=("${ROOT:-}"/dev/neuron[0-9]*)
        found=0
        [ -e "${devices[0]}" ] && found=${#devices[@]}
        [ "${found}" -ge "${expected}" ] && break
        if [ "${waited}" -ge "${wait}" ]; then
            log "${found} Neuron devices after ${wait} s, ${expected} expected (is the Neuron driver loaded?)"
            return 1
        fi
        sleep 5
        waited=$((waited + 5))
    done
    tool=$(command -v neuron-ls || echo /opt/aws/neuron/bin/neuron-ls)
    if ! output=$("${tool}" 2>&1); then
        log "neuron-ls failed: ${output}"
        return 1
    fi
    log "${found} Neuron devices; neuron-ls answers"
}

# until_deadline <command...>: (serving) run it with what is left of the start-up deadline, counted from
# boot as ready.sh counts it (STARTUP_DEADLINE_SECONDS, READY_MARGIN before the launch hook's heartbeat). A pull
# or sync that stalls without failing then fails here, logged and recorded (fail), instead of running
# until the hook abandons the instance with no line anywhere.
until_deadline() {
    local left
    left=$((STARTUP_DEADLINE_SECONDS - $(cut -d . -f 1 "${ROOT}/proc/uptime")))
    if [ "${left}" -le 0 ]; then
        log "the start-up deadline (${STARTUP_DEADLINE_SECONDS} s after boot) has passed"
        return 124
    fi
    timeout "${left}" "$@"
}

# fill_template <template> <output>: copy <template>, every @NAME@ replaced by the value of the
# setting NAME (which must be set), so the timings in cdk_neuron.timeouts reach unit files and nginx.
fill_template() {
    local text names name
    text=$(<"$1") || return 1
    # grep exits 1 when the template has no placeholder: that is not an error.
    names=$({ grep -o '@[A-Z_][A-Z0-9_]*@' "$1" || [ $? -eq 1 ]; } | tr -d '@' | sort -u) || return 1
    for name in ${names}; do
        [ -n "${!name:-}" ] || {
            log "$1 needs the setting ${name}"
            return 1
        }
        text=${text//@${name}@/${!name}}
    done
    printf '%s\n' "${text}" >"$2"
}
