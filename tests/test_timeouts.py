"""The timeout chains: they nest, they are the values the constructs and node programs use, and the doc is fresh."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest

from cdk_neuron import timeouts
from cdk_neuron.node_programs import program
from cdk_neuron.serving.timing import ec2_startup
from cdk_neuron.timeouts import Chain, Nesting, Timeout, chains
from cdk_support import REPO_ROOT
from tools.timeouts_doc import BEGIN, DOC, END, example_chains, render


@pytest.mark.parametrize(
    ("startup", "compile_gib"),
    [(600, 0.5), (1910, 2.4), (3600, 15), (timeouts.LIFECYCLE_HEARTBEAT_MAX, 40), (timeouts.STARTUP_MAX, 40)],
)
@pytest.mark.parametrize("boot", [120, 600])
def test_every_chain_nests(startup: int, boot: int, compile_gib: float) -> None:
    for chain in chains(
        ec2_startup_seconds=startup,
        ec2_boot_seconds=boot,
        sagemaker_download_seconds=60,
        sagemaker_startup_seconds=3600,
        compile_source_gib=compile_gib,
    ):
        assert chain.violations() == [], chain.name


def test_the_startup_chain_catches_a_start_up_longer_than_heartbeats_can_hold() -> None:
    # Issue 25: the hook's heartbeat is the progress window; the start-up budget must stay within
    # what heartbeats can extend it to (the global timeout), or the hook, not the node, ends it.
    longest = timeouts.lifecycle_global_seconds() + 1
    chain = timeouts.serving_startup_chain(longest, 120)
    assert (
        f"EC2 serving: start-up: startup_budget ({longest} s) must end 1 s before "
        f"hook_global ({timeouts.lifecycle_global_seconds()} s)"
    ) in chain.violations()
    assert timeouts.STARTUP_MAX == timeouts.CREATION_POLICY_MAX < timeouts.lifecycle_global_seconds()


def test_the_startup_chain_catches_a_stall_the_hook_would_notice_first() -> None:
    chain = timeouts.serving_startup_chain(3000, 120)
    longer = replace(
        chain,
        timeouts=tuple(
            replace(t, seconds=timeouts.LIFECYCLE_PROGRESS_WINDOW) if t.key == "progress_stall" else t
            for t in chain.timeouts
        ),
    )
    assert any("progress_stall" in v and "hook_heartbeat" in v for v in longer.violations())


def test_the_documented_example_nests_and_its_startup_is_the_fleet_estimate() -> None:
    for chain in example_chains():
        assert chain.violations() == []
    startup = next(c for c in example_chains() if c.name == "EC2 serving: start-up")
    fleet = ec2_startup(14.96, precompiled=True, instance_type="inf2.xlarge")
    assert startup.seconds("startup_budget") == fleet.seconds
    # The hook waits a progress window, not the start-up: the node extends it while it moves.
    assert startup.seconds("hook_heartbeat") == timeouts.LIFECYCLE_PROGRESS_WINDOW < fleet.seconds


def test_a_broken_rule_is_reported_in_words() -> None:
    chain = Chain(
        "test",
        "a -> b",
        (Timeout("outer", 10, "timeout", "x", "y"), Timeout("inner", 10, "timeout", "x", "y")),
        (Nesting("outer", "inner", "within", margin=1), Nesting("outer", "inner", "outlasts", margin=1)),
    )
    assert chain.violations() == [
        "test: inner (10 s) must end 1 s before outer (10 s)",
        "test: inner (10 s) must outlast outer (10 s) by 1 s",
    ]
    with pytest.raises(KeyError, match="test has no timeout 'missing'"):
        chain["missing"]


@pytest.mark.parametrize(
    ("key", "seconds"),
    [("nginx_keepalive", timeouts.ALB_IDLE_TIMEOUT), ("nginx_proxy", timeouts.ALB_IDLE_TIMEOUT)],
)
def test_the_request_chain_catches_a_keep_alive_or_read_timeout_that_does_not_nest(
    key: str, seconds: int
) -> None:
    chain = timeouts.serving_request_chain()
    broken = replace(
        chain, timeouts=tuple(replace(t, seconds=seconds) if t.key == key else t for t in chain.timeouts)
    )
    assert any(key in v for v in broken.violations())


def test_the_startup_chain_tolerates_one_abandoned_launch_and_caps_at_twelve_hours() -> None:
    assert timeouts.creation_policy_seconds(1000) == 2 * 1000
    assert timeouts.creation_policy_seconds(7200) == 14400
    assert timeouts.creation_policy_seconds(30000) == 12 * 3600  # CloudFormation's maximum
    assert timeouts.ready_deadline_seconds(1000) == 1000 - timeouts.READY_MARGIN


def test_the_peer_join_budget_is_what_a_child_node_does_before_its_container_runs() -> None:
    work = (
        timeouts.NODE_BOOT_SECONDS
        + timeouts.EFA_INSTALL_SECONDS
        + timeouts.topology_wait_seconds()
        + timeouts.image_pull_seconds()
    )
    assert timeouts.peer_join_seconds() == math.ceil(timeouts.SAFETY * work)
    assert timeouts.topology_wait_seconds() == 5 * sum(range(1, 12))  # node-setup.sh's retry schedule
    # The old fixed 600 s did not cover a cold child (boot, EFA build and image pull).
    assert timeouts.peer_join_seconds() > 3 * 600
    assert timeouts.peer_settings()["CDK_NEURON_PEER_JOIN_TIMEOUT"] == str(timeouts.peer_join_seconds())


def test_node_programs_take_their_timings_from_settings_not_literals() -> None:
    launcher = program("training/launcher.sh").read_text()
    # Every timing the launcher passes on is a setting the job definition writes from cdk_neuron.timeouts.
    for name in (
        "CDK_NEURON_PEER_JOIN_TIMEOUT",
        "CDK_NEURON_PEER_INTERVAL",
        "CDK_NEURON_PEER_SILENCE",
        "CDK_NEURON_STOP_GRACE",
    ):
        assert f'"${{{name}}}"' in launcher
    assert not re.search(r"TIMEOUT:-[0-9]", launcher)
    setup = program("training/node-setup.sh").read_text()
    assert "TOPOLOGY_ATTEMPTS=" not in setup and "attempt * TOPOLOGY_STEP" in setup
    watch = program("training/peer_watch.py").read_text()
    for option in ("--join-timeout", "--interval", "--silence", "--stop-grace"):
        assert f'parser.add_argument("{option}", type=float, required=True)' in watch


def test_the_document_is_generated_from_the_module_and_linked_from_the_readme() -> None:
    text = DOC.read_text()
    section = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert section == "\n" + render(), "docs/timeouts-and-keep-alives.md is stale: run `make timeouts-doc`"
    assert text.startswith("# Timeouts and keep-alives\n")
    assert "(docs/timeouts-and-keep-alives.md)" in (REPO_ROOT / "README.md").read_text()


def test_an_infrastructure_update_is_on_the_training_chain_and_is_the_clusters_default() -> None:
    # Review (issue 22, S2): every node-program or node-setting change versions the launch template,
    # and Batch applies that as an infrastructure update that ends running jobs after update_timeout.
    from cdk_neuron.training.batch_cluster import DEFAULT_UPDATE_TIMEOUT

    chain = timeouts.training_job_chain()
    (update,) = [t for t in chain.timeouts if t.key == "infrastructure_update"]
    assert update.seconds == DEFAULT_UPDATE_TIMEOUT.to_seconds() == 6 * 3600
    assert any(
        n.outer == "job_attempt" and n.inner == "infrastructure_update" and n.rule == "within"
        for n in chain.nesting
    )
    assert "node programs" in update.why
