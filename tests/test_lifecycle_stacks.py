"""Stack-level lifecycle helpers: consumers that follow a replaced producer, and provider log groups."""

from __future__ import annotations

from typing import Any

import pytest

from cdk_neuron.lifecycle import Change, impact
from cdk_support import make_app, template_of

ACCOUNT, REGION = "111111111111", "us-east-1"


def _app(zone: str | None, follow: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """A producer with a file system and a consumer alarming on it, across stacks (weak references)."""
    import aws_cdk as cdk
    from aws_cdk import aws_cloudwatch as cloudwatch
    from aws_cdk import aws_efs as efs

    from cdk_neuron.lifecycle.stacks import follow_replacements

    app = make_app()
    env = cdk.Environment(account=ACCOUNT, region=REGION)
    producer = cdk.Stack(app, "Producer", env=env)
    fs = efs.CfnFileSystem(producer, "Fs", encrypted=True, availability_zone_name=zone)
    cdk.CfnOutput(producer, "Unrelated", value="x")
    consumer = cdk.Stack(app, "Consumer", env=env)
    cloudwatch.CfnAlarm(
        consumer,
        "Alarm",
        comparison_operator="GreaterThanThreshold",
        evaluation_periods=1,
        threshold=1,
        namespace="AWS/EFS",
        metric_name="PercentIOLimit",
        period=60,
        statistic="Average",
        dimensions=[cloudwatch.CfnAlarm.DimensionProperty(name="FileSystemId", value=fs.ref)],
    )
    if follow:
        follow_replacements(app)
    return template_of(producer), template_of(consumer)


def _read(consumer: dict[str, Any]) -> dict[str, Any]:
    (dimension,) = consumer["Resources"]["Alarm"]["Properties"]["Dimensions"]
    return dimension["Value"]["Fn::GetStackOutput"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def variants() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    return {
        "one_zone": _app("us-east-1a"),
        "regional": _app(None),
        "unfollowed_one_zone": _app("us-east-1a", follow=False),
        "unfollowed_regional": _app(None, follow=False),
    }


def test_the_consumer_reads_an_output_named_after_the_producer_generation(variants: dict[str, Any]) -> None:
    producer, consumer = variants["one_zone"]
    read = _read(consumer)
    assert read["StackName"] == "Producer"
    # The producer publishes exactly that output, with the file system's id; other outputs keep their names.
    assert producer["Outputs"][read["OutputName"]]["Value"] == {"Ref": "Fs"}
    assert "Unrelated" in producer["Outputs"]


def test_replacing_the_producer_resource_changes_the_consumer_template(variants: dict[str, Any]) -> None:
    one_zone, regional = _read(variants["one_zone"][1]), _read(variants["regional"][1])
    assert one_zone["OutputName"] != regional["OutputName"]
    assert one_zone["OutputName"][:-8] == regional["OutputName"][:-8]
    # Without it, the consumer's template stays the same and `cdk deploy` would skip it.
    assert variants["unfollowed_one_zone"][1] == variants["unfollowed_regional"][1]
    # What impact sees: the file system replaced, the alarm updated with it.
    (before_p, before_c), (after_p, after_c) = variants["one_zone"], variants["regional"]
    results = {
        s.stack: s
        for s in impact(
            {"Producer": before_p, "Consumer": before_c}, {"Producer": after_p, "Consumer": after_c}
        )
    }
    assert results["Producer"].find("Fs").change is Change.REPLACED
    assert results["Consumer"].find("Alarm").change is Change.UPDATED


def test_provider_functions_get_log_groups_their_stack_owns_before_anything_runs() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_s3 as s3

    from cdk_neuron.lifecycle import teardown_findings
    from cdk_neuron.lifecycle.stacks import own_provider_logs

    def buckets(name: str) -> cdk.Stack:
        stack = cdk.Stack(make_app(), name, env=cdk.Environment(account=ACCOUNT, region=REGION))
        s3.Bucket(stack, "A", removal_policy=cdk.RemovalPolicy.DESTROY, auto_delete_objects=True)
        s3.Bucket(stack, "B", removal_policy=cdk.RemovalPolicy.DESTROY, auto_delete_objects=True)
        return stack

    before = teardown_findings({"Plain": template_of(buckets("Plain"))})
    assert [f.logical_id for f in before] == [
        "CustomS3AutoDeleteObjectsCustomResourceProviderHandler9D90184F"
    ]
    stack = buckets("Buckets")
    (group,) = own_provider_logs(stack, cdk.RemovalPolicy.DESTROY)
    assert own_provider_logs(stack, cdk.RemovalPolicy.DESTROY) == []  # once per provider
    template = template_of(stack)
    group_id = stack.resolve(group.logical_id)
    assert template["Resources"][group_id]["Properties"] == {
        "LogGroupName": {
            "Fn::Join": [
                "",
                ["/aws/lambda/", {"Ref": "CustomS3AutoDeleteObjectsCustomResourceProviderHandler9D90184F"}],
            ]
        },
        "RetentionInDays": 90,
    }
    assert template["Resources"][group_id]["DeletionPolicy"] == "Delete"
    deletions = [r for r in template["Resources"].values() if r["Type"] == "Custom::S3AutoDeleteObjects"]
    assert len(deletions) == 2 and all(group_id in r["DependsOn"] for r in deletions)
    assert teardown_findings({"Buckets": template}) == []
