"""Every identifier pattern at its edges: each bound, each optional part, each character it allows.

tools/source_mutation.py moves each bound of each pattern by one, makes ``+`` a ``*``, drops each
``?`` and ``$`` and each character (or range) of each ``[...]`` class; the examples below are
chosen so that every such change accepts one of the refused strings or refuses one of the accepted
ones. Limits come from the formats' own references: 12-digit account ids; ``cr-`` plus 8 or 17 hex
digits; ``sg-`` plus 8 to 17; S3 bucket names of 3 to 63 characters; CloudWatch Logs group names of
1 to 512 characters of ``[\\.\\-_/#A-Za-z0-9]``; Batch names of 1 to 128; SageMaker names of 1 to 63;
an image tag of 1 to 128 characters; a SHA-256 digest of 64 hex digits.
"""

from __future__ import annotations

import re

import pytest

from cdk_neuron import catalog
from cdk_neuron import validation as v
from stacks import config

HEX8, HEX16, HEX17 = "0123abcd", "0123456789abcdef", "0123456789abcdef0"

# name -> (pattern, accepted, refused)
EDGES: dict[str, tuple[re.Pattern[str], tuple[str, ...], tuple[str, ...]]] = {
    "ACCOUNT": (
        v.ACCOUNT,
        ("123456789012",),
        ("12345678901", "1234567890123", "123456789012\n", "123456789012x"),
    ),
    "REGION": (
        v.REGION,
        ("us-east-1", "us-gov-west-1", "ap-southeast-42"),
        ("u-east-1", "use-east-1", "us--1", "us-1", "us-east-", "us-east-1a", "us-east-1\n"),
    ),
    "AZ_ID": (
        v.AZ_ID,
        ("use1-az4", "usw2-lax1-az1", "az-az1", "use-az12"),
        ("-az1", "use1-lax-az1", "usw2-1-az1", "use1-az", "use1-az1x", "use1-az4\n"),
    ),
    "RESERVATION_ID": (
        v.RESERVATION_ID,
        ("cr-" + HEX8, "cr-" + HEX17, "cr-abcdef01", "cr-23456789"),
        (
            "cr-" + HEX8[:7],
            "cr-" + HEX8 + "a",
            "cr-" + HEX16,
            "cr-" + HEX17 + "0",
            "cr-0123456789abc",
            "cr-" + HEX8 + "\n",
        ),
    ),
    "RESOURCE_GROUP_ARN": (
        v.RESOURCE_GROUP_ARN,
        (
            "arn:aws:resource-groups:us-east-1:123456789012:group/a",
            "arn:aws-cn:resource-groups:cn-north-1:123456789012:group/Aa0_.-z",
            "arn:aws-us-gov:resource-groups:us-gov-west-1:123456789012:group/" + "g" * 300,
        ),
        (
            "arn:aws:resource-groups:us-east-1:123456789012:group/",
            "arn:aws:resource-groups:us-east-1:123456789012:group/" + "g" * 301,
            "arn:aws:resource-groups:u-east-1:123456789012:group/a",
            "arn:aws:resource-groups:use-east-1:123456789012:group/a",
            "arn:aws:resource-groups:us-1:123456789012:group/a",
            "arn:aws:resource-groups:us-east-:123456789012:group/a",
            "arn:aws:resource-groups:us--1:123456789012:group/a",
            "arn:aws:resource-groups:us-east-1:12345678901:group/a",
            "arn:aws:resource-groups:us-east-1:1234567890123:group/a",
            "arn:aws:resource-groups:us-east-1:123456789012:group/a\n",
        ),
    ),
    "CERTIFICATE_ARN": (
        v.CERTIFICATE_ARN,
        (
            "arn:aws:acm:us-east-1:123456789012:certificate/0a-f9",
            "arn:aws-us-gov:acm:us-gov-west-1:123456789012:certificate/b",
        ),
        (
            "arn:aws:acm::123456789012:certificate/0a",
            "arn:aws:acm:us-east-1:123456789012:certificate/",
            "arn:aws:acm:us-east-1:12345678901:certificate/0a",
            "arn:aws:acm:us-east-1:1234567890123:certificate/0a",
            "arn:aws:acm:us-east-1:123456789012:certificate/0a\n",
        ),
    ),
    "SECRET": (
        v.SECRET,
        (
            "a",
            "s" * 512,
            "Az09/_+=.@-",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:n",
            "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:n",
        ),
        (
            "",
            "s" * 513,
            "a b",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:",
            "arn:aws:secretsmanager::123456789012:secret:n",
            "arn:aws:secretsmanager:us-east-1:12345678901:secret:" + "x" * 460,
            "a\n",
        ),
    ),
    "SECURITY_GROUP_ID": (
        v.SECURITY_GROUP_ID,
        ("sg-" + HEX8, "sg-" + HEX17, "sg-abcdef012", "sg-98765432"),
        ("sg-" + HEX8[:7], "sg-" + HEX17 + "0", "sg-" + HEX8 + "\n", "sg-0123abcG"),
    ),
    "EMAIL": (
        v.EMAIL,
        ("a@b.c", "first.last+tag@example.org"),
        (
            "@b.c",
            "a@.c",
            "a@b.",
            "a@b",
            "a b@c.d",
            "a@b c.d",
            "a@b.c d",
            "a@@b.c",
            "a@b@.c",
            "a@b.c@",
            "a@b.c\n",
        ),
    ),
    "HF_MODEL_ID": (
        v.HF_MODEL_ID,
        ("gpt2", "a", "Z", "9", "org/model-name", "meta-llama/Llama-3.1-8B", "a_b.c-d/e_f.g-h"),
        ("", "-org/model", ".org/m", "org/", "org/m/x", "org/m n", "org/m\n"),
    ),
    "S3_PREFIX_URI": (
        v.S3_PREFIX_URI,
        ("s3://abc/p", "s3://" + "b" * 63 + "/p/", "s3://a.b-c/x/y/", "s3://9z0/p", "s3://a1b/p"),
        (
            "s3://ab/p",
            "s3://" + "b" * 64 + "/p",
            "s3://abc/",
            "s3://abc",
            "s3://-bc/p",
            "s3://ab-/p",
            "s3://abc/p q",
            "s3://aBc/p",
        ),
    ),
    "ECR_REGISTRY": (
        v.ECR_REGISTRY,
        ("123456789012.dkr.ecr.us-east-1.amazonaws.com", "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn"),
        (
            "12345678901.dkr.ecr.us-east-1.amazonaws.com",
            "1234567890123.dkr.ecr.us-east-1.amazonaws.com",
            "123456789012.dkr.ecr..amazonaws.com",
            "123456789012.dkr.ecr.us-east-1.amazonaws.com.cnx",
            "123456789012.dkr.ecr.us-east-1.amazonaws.com\n",
        ),
    ),
    "IMAGE_URI": (
        v.IMAGE_URI,
        (
            "r.io/a:t",
            "registry.example.com:5000/team/app:v1.2",
            "a-1.b.c/x_y.z/w:T_1-0.9",
            "r.io/a:" + "t" * 128,
            "r.io/a@sha256:" + "a" * 64,
            "r.io/a:9",
            "r.io/a:_x",
            "r.i0/a:t",
            "r.a-b/x:t",
            "r.io/a0-b:tA",
            "r.io/a@sha256:" + "0123456789abcdef" * 4,
        ),
        (
            "rio/a:t",
            ".io/a:t",
            "r./a:t",
            "..io/a:t",
            "r.io./a:t",
            "r..io/a:t",
            "r.io/a",
            "r.io/:t",
            "r.io/a:",
            "r.io/a:" + "t" * 129,
            "r.io/a:-t",
            "r.io/a:.t",
            "r.io/a:t t",
            "r.io:/a:t",
            "r.io/a@sha256:" + "a" * 63,
            "r.io/a@sha256:" + "a" * 65,
            "r.io/a@sha256:" + "A" * 64,
            "r.io/a@md5:" + "a" * 64,
            "r.io/A:t",
            "r.io/a:t\n",
        ),
    ),
    "IMAGE_TAG": (
        v.IMAGE_TAG,
        ("v", "_", "9", "V", "t" * 128, "1.2-rc_3", "a.b-c"),
        ("", "t" * 129, "-v", ".v", "v v", "v\n"),
    ),
    "SHA256": (v.SHA256, ("0123456789abcdef" * 4,), ("0" * 63, "0" * 65, "g" * 64, "0" * 64 + "\n")),
    "RELEASE_VERSION": (
        v.RELEASE_VERSION,
        ("1.41.0", "10.0.12"),
        ("1.41", "1..0", ".1.0", "1.0.", "1.41.0a", "1.41.0\n"),
    ),
    "ENVIRONMENT_VARIABLE": (
        v.ENVIRONMENT_VARIABLE,
        ("A", "z", "_", "a1", "A_B9", "Z_z"),
        ("", "1A", "A-B", "A B", "A\n"),
    ),
    "SAGEMAKER_NAME": (
        v.SAGEMAKER_NAME,
        ("a", "Z", "0", "a9", "a-b", "a--b", "A" * 63, "a" + "-b" * 31),
        ("", "-a", "a-", "A" * 64, "a_b", "a\n"),
    ),
    "ALB_FULL_NAME": (
        v.ALB_FULL_NAME,
        ("app/a/" + HEX16, "app/" + "A" * 32 + "/" + HEX16, "app/z-9/" + HEX16),
        (
            "app//" + HEX16,
            "app/" + "A" * 33 + "/" + HEX16,
            "app/a/" + HEX16[:15],
            "app/a/" + HEX16 + "0",
            "app/a_b/" + HEX16,
            "app/a/" + HEX16 + "\n",
        ),
    ),
    "TARGET_GROUP_FULL_NAME": (
        v.TARGET_GROUP_FULL_NAME,
        ("targetgroup/a/" + HEX16, "targetgroup/" + "A" * 32 + "/" + HEX16, "targetgroup/z-9/" + HEX16),
        (
            "targetgroup//" + HEX16,
            "targetgroup/" + "A" * 33 + "/" + HEX16,
            "targetgroup/a/" + HEX16[:15],
            "targetgroup/a/" + HEX16 + "0",
            "targetgroup/a/" + HEX16 + "\n",
        ),
    ),
    "IAM_ROLE_ARN": (
        v.IAM_ROLE_ARN,
        (
            "arn:aws:iam::123456789012:role/r",
            "arn:aws:iam::123456789012:role/" + "r" * 512,
            "arn:aws-cn:iam::123456789012:role/p/x_+=,.@-9",
        ),
        (
            "arn:aws:iam::123456789012:role/",
            "arn:aws:iam::123456789012:role/" + "r" * 513,
            "arn:aws:iam::12345678901:role/r",
            "arn:aws:iam::1234567890123:role/r",
            "arn:aws:iam::123456789012:role/r r",
            "arn:aws:iam::123456789012:role/r\n",
        ),
    ),
    "CONSTRUCT_ADDRESS": (
        v.CONSTRUCT_ADDRESS,
        ("c8" + "0123456789abcdef" * 2 + "01234567",),
        ("c8" + "a" * 39, "c8" + "a" * 41, "c8" + "g" * 40, "c8" + "a" * 40 + "\n"),
    ),
    "LOG_GROUP_NAME": (
        v.LOG_GROUP_NAME,
        ("a", "g" * 512, "Az09_-/.#", "/aws/batch/job"),
        ("", "g" * 513, "a b", "a:b", "a\n"),
    ),
    "ABSOLUTE_DIRECTORY": (
        v.ABSOLUTE_DIRECTORY,
        ("/a", "/a/", "/checkpoints", "/mnt/ckpt/", "/A.z_0-9", "/a/b/c"),
        ("/", "a", "//a", "/a//b", "/a b", "/a\n", "/a/\n"),
    ),
    "S3_KEY_PREFIX": (
        v.S3_KEY_PREFIX,
        ("a/", "neuron-compile-cache/", "Az09!_.()'-/", "a/b/", "a/b/c/", "a/Az09!_.()'-/"),
        ("/", "a", "a//", "/a/", "a b/", "a/b", "a/\n"),
    ),
    "S3_BUCKET_NAME": (
        v.S3_BUCKET_NAME,
        ("abc", "b" * 63, "a.b-c", "0z9", "a0a", "9.9"),
        ("ab", "b" * 64, "-bc", "ab-", ".bc", "ab.", "aBc", "a_c", "abc\n"),
    ),
    "EFS_FILE_SYSTEM_ID": (
        v.EFS_FILE_SYSTEM_ID,
        ("fs-" + HEX8, "fs-" + "0" * 40, "fs-abcdef98"),
        ("fs-" + HEX8[:7], "fs-" + "0" * 41, "fs-0123abcg", "fs-" + HEX8 + "\n"),
    ),
    "EFS_ACCESS_POINT_ID": (
        v.EFS_ACCESS_POINT_ID,
        ("fsap-" + HEX8, "fsap-" + "0" * 40, "fsap-abcdef98"),
        ("fsap-" + HEX8[:7], "fsap-" + "0" * 41, "fsap-0123abcg", "fsap-" + HEX8 + "\n"),
    ),
    "KMS_KEY_ARN": (
        v.KMS_KEY_ARN,
        ("arn:aws:kms:us-east-1:123456789012:key/Az09-", "arn:aws-cn:kms:cn-north-1:123456789012:key/k"),
        (
            "arn:aws:kms::123456789012:key/k",
            "arn:aws:kms:us-east-1:123456789012:key/",
            "arn:aws:kms:us-east-1:12345678901:key/k",
            "arn:aws:kms:us-east-1:1234567890123:key/k",
            "arn:aws:kms:us-east-1:123456789012:key/k_",
            "arn:aws:kms:us-east-1:123456789012:key/k\n",
        ),
    ),
    "BATCH_JOB_QUEUE_ARN": (
        v.BATCH_JOB_QUEUE_ARN,
        (
            "arn:aws:batch:us-east-1:123456789012:job-queue/q",
            "arn:aws:batch:us-east-1:123456789012:job-queue/" + "q" * 128,
            "arn:aws-us-gov:batch:us-gov-west-1:123456789012:job-queue/Az09_-",
        ),
        (
            "arn:aws:batch:us-east-1:123456789012:job-queue/",
            "arn:aws:batch:us-east-1:123456789012:job-queue/" + "q" * 129,
            "arn:aws:batch::123456789012:job-queue/q",
            "arn:aws:batch:us-east-1:12345678901:job-queue/q",
            "arn:aws:batch:us-east-1:1234567890123:job-queue/q",
            "arn:aws:batch:us-east-1:123456789012:job-queue/q.q",
            "arn:aws:batch:us-east-1:123456789012:job-queue/q\n",
        ),
    ),
    "BATCH_JOB_DEFINITION_ARN": (
        v.BATCH_JOB_DEFINITION_ARN,
        (
            "arn:aws:batch:us-east-1:123456789012:job-definition/d:1",
            "arn:aws:batch:us-east-1:123456789012:job-definition/" + "d" * 128 + ":42",
            "arn:aws-cn:batch:cn-north-1:123456789012:job-definition/Az09_-:*",
        ),
        (
            "arn:aws:batch:us-east-1:123456789012:job-definition/:1",
            "arn:aws:batch:us-east-1:123456789012:job-definition/" + "d" * 129 + ":1",
            "arn:aws:batch:us-east-1:123456789012:job-definition/d",
            "arn:aws:batch:us-east-1:123456789012:job-definition/d:",
            "arn:aws:batch:us-east-1:123456789012:job-definition/d:**",
            "arn:aws:batch:us-east-1:123456789012:job-definition/d:1x",
            "arn:aws:batch::123456789012:job-definition/d:1",
            "arn:aws:batch:us-east-1:12345678901:job-definition/d:1",
            "arn:aws:batch:us-east-1:1234567890123:job-definition/d:1",
            "arn:aws:batch:us-east-1:123456789012:job-definition/d:1\n",
        ),
    ),
    "BATCH_VOLUME_NAME": (
        v.BATCH_VOLUME_NAME,
        ("a", "v" * 255, "Az09_-"),
        ("", "v" * 256, "a.b", "a b", "a\n"),
    ),
    "catalog._INSTANCE_TYPE_NAME": (
        catalog._INSTANCE_TYPE_NAME,
        ("trn3.48xlarge", "trn3-gen2.xlarge", "a.b", "a9.x", "z-z.1z"),
        ("trn3", "trn3.48", "3trn.48xlarge", ".48xlarge", "trn3.48xlarge.", "trn3_x.48xlarge"),
    ),
    "config._ENV_NAME": (
        config._ENV_NAME,
        ("a", "Z", "dev", "prod-2", "A" * 64, "a0-Z"),
        ("", "2dev", "-dev", "A" * 65, "dev_2", "dev\n"),
    ),
    "config._NAT_INSTANCE_TYPE": (
        config._NAT_INSTANCE_TYPE,
        tuple(
            f"{family}.{size}"
            for family in ("t3", "t3a", "t4g", "m6g", "m7g", "c6gn", "c7gn", "m6i", "m7i", "c6i", "c7i")
            for size in ("nano", "micro", "small", "medium", "large", "xlarge")
        ),
        ("t4g.2xlarge", "t2.nano", "t4g.nanox", "trn1.32xlarge", "t4g.nano\n"),
    ),
    # ECR CreatePullThroughCacheRule ecrRepositoryPrefix: 2-30 characters, lowercase, separators between.
    "config._ECR_CACHE_PREFIX": (
        config._ECR_CACHE_PREFIX,
        ("ab", "cdk-neuron-dev", "a" * 30, "a.b_c-d", "team/cdk-neuron", "a0"),
        ("a", "a" * 31, "Cdk", "-a", "a-", "a//b", "a--b", "a b", "ab\n", "/ab"),
    ),
}


def _matches(pattern: re.Pattern[str], text: str) -> bool:
    # The callers' own way of matching: fullmatch for instance type names, match for the rest.
    if pattern is catalog._INSTANCE_TYPE_NAME:
        return pattern.fullmatch(text) is not None
    return pattern.match(text) is not None


def test_the_s3_prefix_group_leaves_the_trailing_slash_out() -> None:
    # The lazy prefix group: parse_s3_uri scopes IAM grants to it.
    match = v.S3_PREFIX_URI.match("s3://abc/models/m/")
    assert match is not None and (match["bucket"], match["prefix"]) == ("abc", "models/m")


@pytest.mark.parametrize("name", sorted(EDGES))
def test_every_pattern_accepts_and_refuses_at_its_edges(name: str) -> None:
    pattern, accepted, refused = EDGES[name]
    assert [t for t in accepted if not _matches(pattern, t)] == []
    assert [t for t in refused if _matches(pattern, t)] == []


def test_every_compiled_pattern_of_the_pure_core_has_edges() -> None:
    # The modules' own patterns: what they import from validation is counted there.
    found = {n for n in dir(v) if isinstance(getattr(v, n), re.Pattern)}
    for prefix, module in (("catalog", catalog), ("config", config)):
        found |= {
            f"{prefix}.{n}"
            for n in dir(module)
            if isinstance(getattr(module, n), re.Pattern) and getattr(module, n) is not getattr(v, n, None)
        }
    assert found == set(EDGES)
