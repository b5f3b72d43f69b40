"""The lifecycle gate over every environment the app ships: retry and teardown.

- Retry: a first create that fails at any resource rolls back; nothing it keeps may have a fixed
  name (the retry would fail with "already exists"), in any environment.
- Teardown: dev is destroyed every evening; ``cdk destroy`` must not fail (every bucket and vault it
  deletes is emptied first, services' writes included) and must leave nothing behind (nothing kept,
  no log group a Lambda function creates outside the stack). No environment deletes a key while it
  keeps data that key encrypts.

The change matrix (what each common change replaces) is in test_change_matrix.py.
"""

from __future__ import annotations

import pytest
from app_assembly import SynthesizedApp, shipped_environments, synthesized_app

from cdk_neuron.lifecycle import lifecycle_findings
from stacks.config import load_environments

ENVIRONMENTS = load_environments(shipped_environments())


@pytest.fixture(scope="module")
def built() -> SynthesizedApp:
    return synthesized_app()


@pytest.mark.slow
@pytest.mark.parametrize("env", sorted(ENVIRONMENTS))
def test_every_environment_survives_a_retry_and_its_teardown(built: SynthesizedApp, env: str) -> None:
    teardown = ENVIRONMENTS[env].removal_policy == "destroy"
    found = lifecycle_findings(built.environment(env), teardown=teardown)
    assert [str(f) for f in found] == []


def test_the_gate_covers_a_torn_down_and_a_kept_environment() -> None:
    # Otherwise the test above would check only one of its two paths.
    assert {env.removal_policy for env in ENVIRONMENTS.values()} == {"destroy", "retain"}


@pytest.mark.slow
def test_dev_deletes_what_it_creates_and_empties_what_services_write_into(built: SynthesizedApp) -> None:
    templates = built.environment("dev")
    policies = {
        (stack, logical): resource.get("DeletionPolicy", "Delete")
        for stack, template in templates.items()
        for logical, resource in template["Resources"].items()
    }
    assert {policy for policy in policies.values()} == {"Delete"}
    emptied = {
        (stack, resource["Properties"]["BucketName"]["Ref"])
        for stack, template in templates.items()
        for resource in template["Resources"].values()
        if resource["Type"] == "Custom::S3AutoDeleteObjects"
    }
    # The compile cache the cluster writes into, and the bucket ELB writes access logs (and its test
    # object) into.
    assert sorted(logical[: -len("XXXXXXXX")] for _, logical in emptied) == [
        "CompileCacheBucket",
        "FleetAccessLogs",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("env", sorted(ENVIRONMENTS))
def test_nodes_boot_the_pinned_ami_release_and_only_the_nat_follows_new_releases(
    built: SynthesizedApp, env: str
) -> None:
    """A deploy never picks up a newer Neuron AMI by itself: no Batch infrastructure update under
    running jobs, no fleet replacement, unless ami_release changes."""
    from cdk_neuron import ami
    from cdk_neuron.lifecycle.template import floating_parameters

    config = ENVIRONMENTS[env]
    for stack_id in ("Training", "Serving"):
        parameters = built.template(env, stack_id).get("Parameters", {})
        amis = {p["Default"] for p in parameters.values() if "optimized-ami" in str(p.get("Default"))}
        expected = (
            set()
            if stack_id == "Serving" and config.serving.backend == "sagemaker"
            else {ami.release_parameter(config.ami_release)}
        )
        assert amis == expected, stack_id
    floating = {
        stack_id: sorted(floating_parameters(built.template(env, stack_id)).values())
        for stack_id in ("Network", "Training", "Serving", "Monitoring")
    }
    # The dev NAT instance (aws-cdk-lib's NatProvider.instance_v2) boots the latest Amazon Linux
    # 2023, which AWS publishes under no per-release parameter; a new one replaces that instance only.
    nat = (
        ["/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-6.1-arm64"]
        if config.network.nat_instance_type
        else []
    )
    assert floating == {"Network": nat, "Training": [], "Serving": [], "Monitoring": []}
