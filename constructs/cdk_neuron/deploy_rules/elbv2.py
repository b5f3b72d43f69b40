"""Elastic Load Balancing v2: Application Load Balancers, listeners and target groups."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cdk_neuron.deploy_rules import _base
from cdk_neuron.deploy_rules._base import Finding

LOAD_BALANCER = "AWS::ElasticLoadBalancingV2::LoadBalancer"
TARGET_GROUP = "AWS::ElasticLoadBalancingV2::TargetGroup"
LISTENER = "AWS::ElasticLoadBalancingV2::Listener"


def _is_application(properties: dict[str, Any]) -> bool:
    return bool(properties.get("Type", "application") == "application")


def _attributes(properties: dict[str, Any], key: str) -> Iterator[tuple[int, str, Any]]:
    for index, attribute in enumerate(_base.as_list(properties.get(key)) or []):
        attribute = _base.as_dict(attribute) or {}
        if isinstance(attribute.get("Key"), str):
            yield index, attribute["Key"], attribute.get("Value")


class LoadBalancerZones(_base.DeployRule):
    id = "E9401"
    shortdesc = "An Application Load Balancer needs subnets in at least two Availability Zones"
    description = (
        "An Application Load Balancer must have subnets from at least two Availability Zones. Checked when every "
        "subnet is an AWS::EC2::Subnet in the same template with a literal zone (name or ID) or a Fn::GetAZs index."
    )
    source_url = (
        "https://docs.aws.amazon.com/elasticloadbalancing/latest/application/application-load-balancers.html"
    )
    source_title = (
        "Elastic Load Balancing User Guide: Application Load Balancers (Availability Zones and subnets)"
    )
    resource_types = (LOAD_BALANCER,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        properties = _base.props(resource)
        if not _is_application(properties):
            return
        if "Subnets" in properties:
            key, subnets = "Subnets", _base.as_list(properties["Subnets"])
        else:
            mappings = _base.as_list(properties.get("SubnetMappings"))
            key = "SubnetMappings"
            subnets = (
                None if mappings is None else [(_base.as_dict(m) or {}).get("SubnetId") for m in mappings]
            )
        if not subnets:
            return
        zones = [_base.zone_of(template, subnet) for subnet in subnets]
        if any(zone is None for zone in zones) or len({z[0] for z in zones if z}) != 1:
            return
        if len(set(zones)) < 2:
            yield Finding(
                ("Properties", key),
                f"{name}: all {len(subnets)} subnet(s) are in one Availability Zone ({zones[0][1] if zones[0] else '?'}); "
                "an Application Load Balancer needs subnets in at least two zones. Fix: add a subnet from another zone.",
            )


class TargetGroupHealthCheck(_base.DeployRule):
    id = "E9402"
    shortdesc = "Target group health check timeout below interval; deregistration delay 0-3600 s"
    description = (
        "HealthCheckTimeoutSeconds must be smaller than HealthCheckIntervalSeconds, and the "
        "deregistration_delay.timeout_seconds attribute ranges from 0 to 3600 seconds."
    )
    source_url = (
        "https://docs.aws.amazon.com/elasticloadbalancing/latest/application/target-group-health-checks.html"
    )
    source_title = (
        "Elastic Load Balancing User Guide: Health checks for Application Load Balancer target groups"
    )
    resource_types = (TARGET_GROUP,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        properties = _base.props(resource)
        timeout = _base.as_int(properties.get("HealthCheckTimeoutSeconds"))
        interval = _base.as_int(properties.get("HealthCheckIntervalSeconds"))
        if timeout is not None and interval is not None and timeout >= interval:
            yield Finding(
                ("Properties", "HealthCheckTimeoutSeconds"),
                f"{name}: HealthCheckTimeoutSeconds {timeout} is not smaller than HealthCheckIntervalSeconds "
                f"{interval}. Fix: make the timeout shorter than the interval.",
            )
        for index, key, value in _attributes(properties, "TargetGroupAttributes"):
            seconds = _base.as_int(value)
            if (
                key == "deregistration_delay.timeout_seconds"
                and seconds is not None
                and not 0 <= seconds <= 3600
            ):
                yield Finding(
                    ("Properties", "TargetGroupAttributes", index, "Value"),
                    f"{name}: deregistration_delay.timeout_seconds is {seconds}; the range is 0-3600. Fix: use a "
                    "value in range.",
                )


class LoadBalancerIdleTimeout(_base.DeployRule):
    id = "E9403"
    shortdesc = "Application Load Balancer idle timeout 1-4000 seconds"
    description = (
        "The idle_timeout.timeout_seconds attribute of an Application Load Balancer ranges from 1 to 4000."
    )
    source_url = "https://docs.aws.amazon.com/elasticloadbalancing/latest/application/edit-load-balancer-attributes.html"
    source_title = "Elastic Load Balancing User Guide: Edit attributes for your Application Load Balancer"
    resource_types = (LOAD_BALANCER,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        for index, key, value in _attributes(_base.props(resource), "LoadBalancerAttributes"):
            seconds = _base.as_int(value)
            if key == "idle_timeout.timeout_seconds" and seconds is not None and not 1 <= seconds <= 4000:
                yield Finding(
                    ("Properties", "LoadBalancerAttributes", index, "Value"),
                    f"{name}: idle_timeout.timeout_seconds is {seconds}; the range is 1-4000. Fix: use a value in range.",
                )


class SecureListenerCertificate(_base.DeployRule):
    id = "E9404"
    shortdesc = "HTTPS and TLS listeners need a certificate"
    description = (
        "A listener with Protocol HTTPS or TLS must specify exactly one default certificate (Certificates)."
    )
    source_url = (
        "https://docs.aws.amazon.com/elasticloadbalancing/latest/application/create-https-listener.html"
    )
    source_title = (
        "Elastic Load Balancing User Guide: Create an HTTPS listener for your Application Load Balancer"
    )
    resource_types = (LISTENER,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        properties = _base.props(resource)
        protocol = properties.get("Protocol")
        if protocol in ("HTTPS", "TLS") and properties.get("Certificates") in (None, []):
            yield Finding(
                ("Properties", "Protocol"),
                f"{name}: Protocol is {protocol} but no Certificates are set. Fix: add the ACM certificate ARN to "
                "Certificates.",
            )


class AccessLogBucketEncryption(_base.DeployRule):
    id = "E9405"
    shortdesc = "Load balancer access-log bucket must use SSE-S3"
    description = (
        "The only server-side encryption option supported for an Application Load Balancer access-log bucket is "
        "Amazon S3-managed keys (SSE-S3). Flags access_logs.s3.bucket pointing at a bucket in the same template "
        "whose default encryption is aws:kms or aws:kms:dsse."
    )
    source_url = (
        "https://docs.aws.amazon.com/elasticloadbalancing/latest/application/enable-access-logging.html"
    )
    source_title = "Elastic Load Balancing User Guide: Enable access logs for your Application Load Balancer"
    resource_types = (LOAD_BALANCER,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        for index, key, value in _attributes(_base.props(resource), "LoadBalancerAttributes"):
            if key != "access_logs.s3.bucket":
                continue
            bucket = template.target(value, "AWS::S3::Bucket")
            if bucket is None:
                continue
            encryption = _base.as_dict(_base.props(bucket[1]).get("BucketEncryption")) or {}
            for rule in _base.as_list(encryption.get("ServerSideEncryptionConfiguration")) or []:
                default = (
                    _base.as_dict((_base.as_dict(rule) or {}).get("ServerSideEncryptionByDefault")) or {}
                )
                algorithm = default.get("SSEAlgorithm")
                if isinstance(algorithm, str) and algorithm.startswith("aws:kms"):
                    yield Finding(
                        ("Properties", "LoadBalancerAttributes", index, "Value"),
                        f"{name}: access logs go to bucket {bucket[0]}, encrypted with SSEAlgorithm {algorithm!r}; "
                        "Elastic Load Balancing only supports SSE-S3 for access-log buckets. Fix: set the bucket's "
                        "SSEAlgorithm to AES256.",
                    )
