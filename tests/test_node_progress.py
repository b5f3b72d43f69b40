"""The serving progress watch (serving/progress.sh), rehearsed under bash.

It extends the launch lifecycle action (RecordLifecycleActionHeartbeat) while the start-up makes
progress, and fails the start-up, loudly, when it stops moving: the launch hook's heartbeat timeout
is a progress window (cdk_neuron.timeouts.LIFECYCLE_PROGRESS_WINDOW), not the whole start-up.

Time is the kernel's uptime (the sandbox's /proc/uptime): the stubbed ``sleep`` advances it by its
argument, so a test runs minutes of watching in a moment.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from node_sandbox import Sandbox, index_of
from test_node_programs import FLEET, IMDS, _failure_recorded, _serving_box

from cdk_neuron import timeouts

INTERVAL = timeouts.PROGRESS_INTERVAL
STALL = timeouts.PROGRESS_STALL
HEARTBEAT = (
    "aws autoscaling record-lifecycle-action-heartbeat --region us-east-1 --lifecycle-hook-name "
    "cdk-neuron-ready --auto-scaling-group-name fleet-group --instance-id i-0abc"
)


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = Sandbox(tmp_path)
    box.stub("curl", IMDS)
    box.write("/dev/neuron0", "")
    _serving_box(box, progress_watch=True)
    # Time passes as the watch sleeps.
    box.stub(
        "sleep",
        f'read -r up _ < {box.root}/proc/uptime; echo "$((${{up%%.*}} + $1)).00 1.00" > {box.root}/proc/uptime',
    )
    return box


@pytest.fixture
def starter() -> Iterator[subprocess.Popen[bytes]]:
    """The start-up program the watch follows (boot.sh or ready.sh on a node), reaped as soon as it
    ends, as its parent on a node reaps it (a zombie still answers ``kill -0``)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    reaper = threading.Thread(target=process.wait)
    reaper.start()
    yield process
    process.kill()
    reaper.join()


def _df_growing(sandbox: Sandbox, looks: int) -> None:
    """``df`` reports more bytes used at each of the first ``looks`` looks, then the same."""
    counter = sandbox.root / "df-count"
    sandbox.stub(
        "df",
        f"n=$(($(cat {counter} 2>/dev/null || echo 0) + 1)); echo $n > {counter}\n"
        f"[ $n -le {looks} ] || n={looks}\n"
        "printf '        Used\\n%s\\n' $((n * 1048576))",
    )


def _end_after(sandbox: Sandbox, starter: subprocess.Popen[bytes], seconds: int) -> None:
    """The start-up program ends once ``seconds`` of uptime have passed (checked at each sleep)."""
    tick = sandbox.bin.joinpath("sleep").read_text().split("\n", 2)[2]  # the body, without the stub's header
    sandbox.stub(
        "sleep",
        tick + f'\n[ "$(cut -d . -f 1 {sandbox.root}/proc/uptime)" -lt {seconds} ] || '
        f"{{ kill {starter.pid}; while kill -0 {starter.pid} 2>/dev/null; do :; done; }}",  # ended and reaped
    )


def test_the_hook_waits_a_progress_window_and_heartbeats_hold_it_for_the_whole_start_up() -> None:
    # Issue 25: the heartbeat timeout was the worst-case start-up (prod 3,014 s); now it is the
    # progress window, and heartbeats extend it up to the hook's global timeout, which covers the
    # longest start-up a fleet may budget.
    window = timeouts.LIFECYCLE_PROGRESS_WINDOW
    assert window == STALL + 2 * INTERVAL + timeouts.PROGRESS_REPORT == 450
    assert timeouts.hook_heartbeat_seconds(120) == window
    assert timeouts.lifecycle_global_seconds(window) == 100 * window  # below 48 h
    assert timeouts.lifecycle_global_seconds(7200) == 48 * 3600  # 100 x 7,200 s would exceed it
    assert timeouts.lifecycle_global_seconds(window) > timeouts.STARTUP_MAX
    # A boot longer than the window (a measured one) widens it: no heartbeat can come before boot.sh.
    assert timeouts.hook_heartbeat_seconds(600) == 600 + INTERVAL
    assert timeouts.hook_heartbeat_seconds(10_000) == timeouts.LIFECYCLE_HEARTBEAT_MAX


def test_a_copy_that_writes_bytes_is_extended_at_every_look(
    sandbox: Sandbox, starter: subprocess.Popen[bytes]
) -> None:
    sandbox.write("/etc/cdk-neuron/progress", "image-pull /var/lib/cdk-neuron/docker\n")
    _df_growing(sandbox, looks=100)
    _end_after(sandbox, starter, 100 + 10 * INTERVAL)
    result = sandbox.run("serving/progress.sh", str(starter.pid))
    assert result.returncode == 0, result.stderr
    # One heartbeat per look, every interval, while the bytes grow.
    assert sandbox.calls("aws") == [HEARTBEAT] * 10
    assert sandbox.calls("sleep") == [f"sleep {INTERVAL}"] * 10
    assert sandbox.calls("df") == [f"df -B1 --output=used {sandbox.root}/var/lib/cdk-neuron/docker"] * 10


def test_a_copy_that_stops_writing_fails_the_start_up_before_the_hook_gives_up(
    sandbox: Sandbox, starter: subprocess.Popen[bytes]
) -> None:
    sandbox.write("/etc/cdk-neuron/progress", "artifact-transfer /var/lib/cdk-neuron/model\n")
    _df_growing(sandbox, looks=3)  # three looks of progress (the first is the new phase), then none
    result = sandbox.run("serving/progress.sh", str(starter.pid))
    assert result.returncode == 1
    assert sandbox.calls("aws autoscaling record-lifecycle-action-heartbeat") == [HEARTBEAT] * 3
    why = f"no progress in artifact-transfer for {STALL} s (PROGRESS_STALL_SECONDS {STALL})"
    assert f"FAILED: {why}" in result.stderr
    _failure_recorded(sandbox, why)
    # The start-up program was stopped first, so it cannot complete the action after the ABANDON.
    assert starter.wait(timeout=5) == -15
    # Last heartbeat at 100 + 2 intervals; the failure comes a stall later, inside the hook's window.
    last_beat, failed = 100 + 2 * INTERVAL, 100 + 2 * INTERVAL + STALL
    assert failed - last_beat < timeouts.LIFECYCLE_PROGRESS_WINDOW - timeouts.PROGRESS_REPORT


def test_the_load_progresses_while_every_replica_runs(
    sandbox: Sandbox, starter: subprocess.Popen[bytes]
) -> None:
    _serving_box(sandbox, progress_watch=True, REPLICAS=2)
    sandbox.write("/etc/cdk-neuron/progress", "load \n")
    state = sandbox.root / "replica-1-state"
    state.write_text("active")
    # Replica 1 exits once ten minutes have passed (the Neuron runtime failed its load).
    sandbox.stub(
        "systemctl",
        f'case "$*" in *replica@1*) [ "$(cut -d . -f 1 {sandbox.root}/proc/uptime)" -lt 700 ] ;; *) exit 0 ;; esac',
    )
    result = sandbox.run("serving/progress.sh", str(starter.pid))
    assert result.returncode == 1
    beats = sandbox.calls("aws autoscaling record-lifecycle-action-heartbeat")
    assert len(beats) == 10  # 100 s .. 640 s
    assert "systemctl is-active --quiet cdk-neuron-replica@0.service" in sandbox.calls("systemctl")
    assert f"FAILED: no progress in load for {STALL} s" in result.stderr


def test_a_step_without_a_copy_progresses_while_it_runs(
    sandbox: Sandbox, starter: subprocess.Popen[bytes]
) -> None:
    sandbox.write("/etc/cdk-neuron/progress", "data-volume \n")
    _end_after(sandbox, starter, 100 + 2 * STALL)
    result = sandbox.run("serving/progress.sh", str(starter.pid))
    assert result.returncode == 0, result.stderr
    assert "FAILED" not in result.stderr
    assert len(sandbox.calls("aws autoscaling record-lifecycle-action-heartbeat")) == 2 * STALL // INTERVAL


def test_nothing_pending_ends_the_watch_without_failing(
    sandbox: Sandbox, starter: subprocess.Popen[bytes]
) -> None:
    # A reboot while in service runs ready.sh again: Auto Scaling holds no action to extend or fail.
    sandbox.stub(
        "aws",
        'echo "An error occurred (ValidationError): No active Lifecycle Action found with instance ID i-0abc" >&2; exit 254',
    )
    result = sandbox.run("serving/progress.sh", str(starter.pid))
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("aws") == [HEARTBEAT]
    assert "no lifecycle action is pending: nothing to extend" in result.stderr
    assert starter.poll() is None  # the start-up goes on


def test_a_refused_heartbeat_is_logged_and_tried_again(
    sandbox: Sandbox, starter: subprocess.Popen[bytes]
) -> None:
    sandbox.stub(
        "aws",
        'echo "An error occurred (AccessDenied) when calling RecordLifecycleActionHeartbeat" >&2; exit 254',
    )
    _end_after(sandbox, starter, 100 + 3 * INTERVAL)
    result = sandbox.run("serving/progress.sh", str(starter.pid))
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("aws") == [HEARTBEAT] * 3
    assert "record-lifecycle-action-heartbeat failed: An error occurred (AccessDenied)" in result.stderr
    assert "could not record a heartbeat; the hook's window covers the next try" in result.stderr


def test_the_watch_ends_with_its_start_up(sandbox: Sandbox) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    result = sandbox.run("serving/progress.sh", str(gone.pid))
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("aws") == []


def _real_time(sandbox: Sandbox) -> None:
    """Boot.sh and ready.sh with the real watch: time does not jump (their deadline counts it too),
    and the watch looks every 20 ms."""
    sandbox.stub("sleep", "python3 -c 'import time; time.sleep(0.02)'")


def _after_a_heartbeat(sandbox: Sandbox) -> str:
    """A stub body that waits (up to 10 s) until the watch has recorded a heartbeat."""
    return (
        f"for _ in $(seq 500); do grep -q record-lifecycle-action-heartbeat {sandbox.log} && break; "
        "python3 -c 'import time; time.sleep(0.02)'; done"
    )


def test_serving_boot_runs_the_watch_and_stops_it_before_handing_over(sandbox: Sandbox) -> None:
    _real_time(sandbox)
    sandbox.stub("docker", 'case "$1" in pull) ' + _after_a_heartbeat(sandbox) + " ;; esac")
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    assert index_of(calls, HEARTBEAT) < index_of(calls, "systemctl start --no-block cdk-neuron-ready.service")
    # Handed over: no phase left behind for cdk-neuron-ready, which runs its own watch, and no watch.
    assert not sandbox.file("/etc/cdk-neuron/progress").exists()
    settled = len(sandbox.calls())
    subprocess.run([str(sandbox.bin / "sleep")], check=True)  # a few looks' time
    assert len(sandbox.calls()) == settled + 1  # only that sleep itself: the watch is gone
    assert "FAILED" not in result.stderr


def test_serving_boot_and_ready_name_what_they_do_for_the_watch(sandbox: Sandbox) -> None:
    boot = sandbox.home.joinpath("serving/boot.sh").read_text()
    for phase in (
        "progress_phase neuron-devices",
        "progress_phase data-volume",
        'progress_phase image-pull "${DATA_DIR}/docker"',
        'progress_phase artifact-transfer "${DATA_DIR}/model"',
        "progress_phase units",
    ):
        assert phase in boot
    ready = sandbox.home.joinpath("serving/ready.sh").read_text()
    assert ready.index("start_progress_watch") > ready.index("Warmed:*)")  # a pool launch needs none
    assert ready.index("progress_phase load") < ready.index("until curl")
    assert ready.index("stop_progress_watch") < ready.rindex("complete_lifecycle CONTINUE || fail")


def test_ready_keeps_the_watch_until_the_replicas_answer(sandbox: Sandbox) -> None:
    _real_time(sandbox)
    sandbox.stub(
        "curl",
        IMDS.replace(
            '*127.0.0.1*) exit "${HEALTH_EXIT:-0}" ;;', "*127.0.0.1*) " + _after_a_heartbeat(sandbox) + " ;;"
        ),
    )
    result = sandbox.run("serving/ready.sh")
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    complete = index_of(calls, "aws autoscaling complete-lifecycle-action")
    assert index_of(calls, HEARTBEAT) < complete
    assert not any(c.startswith(HEARTBEAT) for c in calls[complete:])
    assert not sandbox.file("/etc/cdk-neuron/progress").exists()


def test_a_warm_pool_launch_completes_without_a_watch(sandbox: Sandbox) -> None:
    result = sandbox.run("serving/ready.sh", env={"TARGET_STATE": "Warmed:Stopped"})
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("aws autoscaling record-lifecycle-action-heartbeat") == []


def test_the_node_settings_carry_the_watch_timings() -> None:
    assert FLEET["PROGRESS_INTERVAL_SECONDS"] == INTERVAL
    assert FLEET["PROGRESS_STALL_SECONDS"] == STALL
