"""The harness itself: normalization and nag helpers must do what they claim."""

from __future__ import annotations

from cdk_support import make_app, nag_violations, normalize_template, template_of


def test_normalize_strips_bootstrap_and_asset_hashes() -> None:
    raw = {
        "Parameters": {"BootstrapVersion": {"Type": "AWS::SSM::Parameter::Value<String>"}},
        "Rules": {"CheckBootstrapVersion": {"Assertions": []}},
        "Resources": {
            "Fn": {
                "Type": "AWS::Lambda::Function",
                "Properties": {"Code": {"S3Key": "a" * 64 + ".zip"}},
                "Metadata": {"aws:cdk:path": "S/Fn/Resource"},
            }
        },
    }
    out = normalize_template(raw)
    assert "Parameters" not in out
    assert "Rules" not in out
    assert out["Resources"]["Fn"]["Properties"]["Code"]["S3Key"] == "ASSET_HASH.zip"
    assert "Metadata" not in out["Resources"]["Fn"]


def test_nag_helper_reports_and_honours_acknowledgments() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_sns as sns

    app = make_app()
    stack = cdk.Stack(app, "Harness")
    topic = sns.Topic(stack, "Topic")
    found = nag_violations(app, packs=["AwsSolutions"])
    assert any(line.startswith("AwsSolutions-SNS3") for line in found)
    cdk.Validations.of(topic).acknowledge(
        cdk.Acknowledgment(id="AwsSolutions-SNS3", reason="harness test of acknowledgments")
    )
    assert not any(line.startswith("AwsSolutions-SNS3") for line in nag_violations(app, ["AwsSolutions"]))
    assert "Harness" not in template_of(stack).get("Resources", {})
