"""CompileCache: a KMS-encrypted, TLS-only, private bucket with expiring entries and prefix-scoped grants.

One app, synthesized once: ``Cache`` has the defaults and a job role granted read-write plus a
fleet role granted read; ``Custom`` has DESTROY, a custom prefix and expiry, and access logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template
from deploy_rules_gate import check_gate, gate_params
from syrupy.assertion import SnapshotAssertion

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.storage import COMPILE_CACHE_ENV, CompileCache
from cdk_support import TEST_ACCOUNT, make_app, nag_violations, normalize_template

ENV = cdk.Environment(account=TEST_ACCOUNT, region="us-east-1")


@dataclass
class Built:
    app: cdk.App
    stack: cdk.Stack
    custom_stack: cdk.Stack
    cache: CompileCache
    custom: CompileCache
    job_role: iam.Role
    fleet_role: iam.Role
    template: Template
    custom_template: Template

    def logical_id(self, construct: Any) -> str:
        return cdk.Stack.of(construct).get_logical_id(construct.node.default_child)


@pytest.fixture(scope="module")
def built() -> Built:
    app = make_app()
    stack = cdk.Stack(app, "Cache", env=ENV)
    cache = CompileCache(stack, "CompileCache")
    job_role = iam.Role(stack, "JobRole", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    fleet_role = iam.Role(stack, "FleetRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    cache.grant_read_write(job_role)
    cache.grant_read(fleet_role)

    custom_stack = cdk.Stack(app, "Custom", env=ENV)
    logs = s3.Bucket(
        custom_stack,
        "Logs",
        enforce_ssl=True,
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
    )
    custom = CompileCache(
        custom_stack,
        "CompileCache",
        removal_policy=cdk.RemovalPolicy.DESTROY,
        expire_after=cdk.Duration.days(14),
        prefix="llama3-70b/neuronxcc/",
        server_access_logs_bucket=logs,
    )
    return Built(
        app=app,
        stack=stack,
        custom_stack=custom_stack,
        cache=cache,
        custom=custom,
        job_role=job_role,
        fleet_role=fleet_role,
        template=Template.from_stack(stack),
        custom_template=Template.from_stack(custom_stack),
    )


def statements_of(template: Template, role_logical_id: str) -> list[dict[str, Any]]:
    policies = template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"Roles": Match.array_with([{"Ref": role_logical_id}])}}
    )
    return [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]


def test_bucket_is_kms_encrypted_with_a_rotating_key_and_bucket_keys(built: Built) -> None:
    key_id = built.logical_id(built.cache.kms_key)
    built.template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {
                        "BucketKeyEnabled": True,
                        "ServerSideEncryptionByDefault": {
                            "SSEAlgorithm": "aws:kms",
                            "KMSMasterKeyID": {"Fn::GetAtt": [key_id, "Arn"]},
                        },
                    }
                ]
            }
        },
    )
    built.template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


def test_public_access_is_blocked_and_acls_are_off(built: Built) -> None:
    built.template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
        },
    )


def test_bucket_policy_denies_plain_http_and_old_tls(built: Built) -> None:
    [policy] = built.template.find_resources("AWS::S3::BucketPolicy").values()
    denies = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    conditions = [s["Condition"] for s in denies]
    assert {"Bool": {"aws:SecureTransport": "false"}} in conditions
    assert {"NumericLessThan": {"s3:TlsVersion": 1.2}} in conditions
    assert all(s["Principal"] == {"AWS": "*"} and s["Action"] == "s3:*" for s in denies)


def test_lifecycle_expires_stale_entries_under_the_prefix(built: Built) -> None:
    built.template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LifecycleConfiguration": {
                "Rules": [
                    {
                        "Id": "ExpireStaleCompileCacheEntries",
                        "Prefix": "neuron-compile-cache/",
                        "ExpirationInDays": 30,
                        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                        "Status": "Enabled",
                    }
                ]
            },
            "VersioningConfiguration": Match.absent(),
        },
    )
    built.custom_template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LifecycleConfiguration": {
                "Rules": [Match.object_like({"Prefix": "llama3-70b/neuronxcc/", "ExpirationInDays": 14})]
            }
        },
    )


def test_url_and_environment(built: Built) -> None:
    bucket_id = built.logical_id(built.cache.bucket)
    expected = {"Fn::Join": ["", ["s3://", {"Ref": bucket_id}, "/neuron-compile-cache/"]]}
    assert built.stack.resolve(built.cache.url) == expected
    assert built.stack.resolve(built.cache.environment) == {COMPILE_CACHE_ENV: expected}
    assert COMPILE_CACHE_ENV == "NEURON_COMPILE_CACHE_URL"


def test_read_write_grant_is_limited_to_the_prefix(built: Built) -> None:
    bucket_id = built.logical_id(built.cache.bucket)
    key_id = built.logical_id(built.cache.kms_key)
    statements = statements_of(built.template, built.logical_id(built.job_role))
    by_action = {str(s["Action"]): s for s in statements}
    objects = by_action[str(["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"])]
    assert objects["Resource"] == {
        "Fn::Join": ["", [{"Fn::GetAtt": [bucket_id, "Arn"]}, "/neuron-compile-cache/*"]]
    }
    listing = by_action["s3:ListBucket"]
    assert listing["Resource"] == {"Fn::GetAtt": [bucket_id, "Arn"]}
    assert listing["Condition"] == {
        "StringLike": {"s3:prefix": ["neuron-compile-cache/", "neuron-compile-cache/*"]}
    }
    key = by_action[str(["kms:Decrypt", "kms:GenerateDataKey"])]
    assert key["Resource"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert len(statements) == 3
    # no wildcard actions anywhere in the grant
    actions = [
        a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    ]
    assert not [a for a in actions if "*" in a]


def test_read_grant_cannot_write(built: Built) -> None:
    statements = statements_of(built.template, built.logical_id(built.fleet_role))
    actions = sorted(
        a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    )
    assert actions == ["kms:Decrypt", "s3:GetObject", "s3:ListBucket"]


def test_removal_policy_per_setting(built: Built) -> None:
    built.template.has_resource(
        "AWS::S3::Bucket", {"DeletionPolicy": "RetainExceptOnCreate", "UpdateReplacePolicy": "Retain"}
    )
    built.template.has_resource("AWS::KMS::Key", {"DeletionPolicy": "RetainExceptOnCreate"})
    assert built.template.find_resources("Custom::S3AutoDeleteObjects") == {}
    cache_bucket = built.logical_id(built.custom.bucket)
    assert built.custom_template.to_json()["Resources"][cache_bucket]["DeletionPolicy"] == "Delete"
    built.custom_template.has_resource("AWS::KMS::Key", {"DeletionPolicy": "Delete"})
    # A deleted cache is emptied first: cdk destroy would fail on the entries the cluster wrote.
    built.custom_template.has_resource_properties(
        "Custom::S3AutoDeleteObjects", {"BucketName": {"Ref": cache_bucket}}
    )


def test_access_logs_when_a_log_bucket_is_given(built: Built) -> None:
    built.custom_template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LoggingConfiguration": {
                "DestinationBucketName": Match.any_value(),
                "LogFilePrefix": "llama3-70b/neuronxcc/",
            }
        },
    )
    built.template.has_resource_properties("AWS::S3::Bucket", {"LoggingConfiguration": Match.absent()})


def test_cdk_nag_both_packs_clean_on_the_cache(built: Built) -> None:
    found: list[str] = []
    for line in nag_violations(built.app):
        rule, paths = line.split(": ", 1)
        found += [f"{rule}: {p}" for p in paths.split(", ") if "/CompileCache/" in p]
    assert found == []


def test_granted_roles_need_one_prefix_wildcard_acknowledgment(built: Built) -> None:
    # What a consumer's role has to acknowledge after a grant: the object ARN under the prefix.
    bucket_id = built.logical_id(built.cache.bucket)
    role_findings = [line for line in nag_violations(built.app, ["AwsSolutions"]) if "Role/" in line]
    assert role_findings == [
        f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/neuron-compile-cache/*]: "
        "Cache/FleetRole/DefaultPolicy/Resource, Cache/JobRole/DefaultPolicy/Resource"
    ]


def test_snapshot(built: Built, snapshot_json: SnapshotAssertion) -> None:
    assert normalize_template(dict(built.template.to_json())) == snapshot_json


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"prefix": "neuron-compile-cache"},
            r"^Bad/CompileCache: prefix='neuron-compile-cache': must be S3-safe path segments ending in '/'",
        ),
        ({"prefix": "/cache/"}, r"^Bad/CompileCache: prefix='/cache/'"),
        ({"prefix": "cache/*/"}, r"^Bad/CompileCache: prefix='cache/\*/'"),
        ({"prefix": ""}, r"^Bad/CompileCache: prefix=''"),
        (
            {"expire_after": cdk.Duration.days(0)},
            r"^Bad/CompileCache: expire_after='0 days': must be whole days >= 1",
        ),
        (
            {"expire_after": cdk.Duration.hours(36)},
            r"^Bad/CompileCache: expire_after='1 day 12 hours': use a whole number of days",
        ),
        ({"removal_policy": cdk.RemovalPolicy.SNAPSHOT}, r"^Bad/CompileCache: removal_policy="),
    ],
)
def test_bad_props_raise(kwargs: dict[str, Any], message: str) -> None:
    stack = cdk.Stack(make_app(), "Bad")
    with pytest.raises(NeuronConfigError, match=message):
        CompileCache(stack, "CompileCache", **kwargs)


@pytest.mark.parametrize(
    ("name", "rule"), gate_params("storage_compile_cache:stack", "storage_compile_cache:custom")
)
def test_deploy_rules(built: Built, name: str, rule: str | None) -> None:
    template = built.template if name.endswith(":stack") else built.custom_template
    check_gate(name, template.to_json(), rule)
