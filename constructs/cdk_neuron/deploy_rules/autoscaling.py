"""Amazon EC2 Auto Scaling groups, their update/creation policies, lifecycle hooks and warm pools."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cdk_neuron.deploy_rules import _base
from cdk_neuron.deploy_rules._base import Finding

ASG = "AWS::AutoScaling::AutoScalingGroup"
UPDATE_POLICY_DOC = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-updatepolicy.html"
)


class RollingUpdatePauseTime(_base.DeployRule):
    id = "E9301"
    shortdesc = "AutoScalingRollingUpdate PauseTime at most PT1H, MinInstancesInService below MaxSize"
    description = (
        "The maximum amount of time that can be specified for the AutoScalingRollingUpdate PauseTime is one hour "
        "(PT1H); with WaitOnResourceSignals it is also the signal timeout for each batch. MinInstancesInService "
        "must be less than the group's MaxSize."
    )
    source_url = UPDATE_POLICY_DOC
    source_title = "AWS CloudFormation User Guide: UpdatePolicy attribute (AutoScalingRollingUpdate)"
    resource_types = (ASG,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        rolling = _base.as_dict(
            (_base.as_dict(resource.get("UpdatePolicy")) or {}).get("AutoScalingRollingUpdate")
        )
        if rolling is None:
            return
        pause = rolling.get("PauseTime")
        seconds = _base.iso8601_seconds(pause)
        if seconds is not None and seconds > 3600:
            yield Finding(
                ("UpdatePolicy", "AutoScalingRollingUpdate", "PauseTime"),
                f"{name}: UpdatePolicy.AutoScalingRollingUpdate.PauseTime is {pause} ({seconds} s); CloudFormation "
                "accepts at most PT1H. Fix: cap it at PT1H (use an instance refresh or a lifecycle hook for longer "
                "warm-ups).",
            )
        min_in_service = _base.as_int(rolling.get("MinInstancesInService"))
        max_size = _base.as_int(_base.props(resource).get("MaxSize"))
        if min_in_service is not None and max_size is not None and min_in_service >= max_size:
            yield Finding(
                ("UpdatePolicy", "AutoScalingRollingUpdate", "MinInstancesInService"),
                f"{name}: MinInstancesInService is {min_in_service} but MaxSize is {max_size}; it must be less "
                "than MaxSize or CloudFormation cannot replace any instance. Fix: lower it or raise MaxSize.",
            )


class CreationPolicySignals(_base.DeployRule):
    id = "E9302"
    shortdesc = "CreationPolicy ResourceSignal Timeout is at most PT12H and Count is reachable"
    description = (
        "The maximum ResourceSignal Timeout is 12 hours. An Auto Scaling group launches DesiredCapacity (or "
        "MinSize) instances at creation, so a Count above that number can never be reached."
    )
    source_url = (
        "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-creationpolicy.html"
    )
    source_title = "AWS CloudFormation User Guide: CreationPolicy attribute"
    resource_types = (ASG, "AWS::EC2::Instance")

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        signal = _base.as_dict((_base.as_dict(resource.get("CreationPolicy")) or {}).get("ResourceSignal"))
        if signal is None:
            return
        timeout = signal.get("Timeout")
        seconds = _base.iso8601_seconds(timeout)
        if seconds is not None and seconds > 12 * 3600:
            yield Finding(
                ("CreationPolicy", "ResourceSignal", "Timeout"),
                f"{name}: CreationPolicy.ResourceSignal.Timeout is {timeout}; the maximum is PT12H. Fix: use PT12H "
                "or less.",
            )
        if resource.get("Type") != ASG:
            return
        count = _base.as_int(signal.get("Count"))
        properties = _base.props(resource)
        launched = _base.as_int(properties.get("DesiredCapacity", properties.get("MinSize")))
        if count is not None and launched is not None and count > launched:
            yield Finding(
                ("CreationPolicy", "ResourceSignal", "Count"),
                f"{name}: CreationPolicy waits for {count} signals but the group launches only {launched} "
                "instance(s) at creation (DesiredCapacity, else MinSize), so creation always times out. Fix: set "
                f"Count to at most {launched}.",
            )


def _hooks(resource: dict[str, Any]) -> Iterator[tuple[tuple[str | int, ...], dict[str, Any]]]:
    properties = _base.props(resource)
    if resource.get("Type") == "AWS::AutoScaling::LifecycleHook":
        yield ("Properties",), properties
        return
    for index, hook in enumerate(_base.as_list(properties.get("LifecycleHookSpecificationList")) or []):
        hook = _base.as_dict(hook)
        if hook is not None:
            yield ("Properties", "LifecycleHookSpecificationList", index), hook


class LifecycleHookLimits(_base.DeployRule):
    id = "E9303"
    shortdesc = "Lifecycle hook HeartbeatTimeout 30-7200 s and DefaultResult CONTINUE or ABANDON"
    description = (
        "A lifecycle hook's HeartbeatTimeout ranges from 30 to 7200 seconds and its DefaultResult is CONTINUE or "
        "ABANDON (hooks on the group and AWS::AutoScaling::LifecycleHook resources)."
    )
    source_url = "https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_PutLifecycleHook.html"
    source_title = "Amazon EC2 Auto Scaling API Reference: PutLifecycleHook"
    resource_types = (ASG, "AWS::AutoScaling::LifecycleHook")

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        for path, hook in _hooks(resource):
            timeout = _base.as_int(hook.get("HeartbeatTimeout"))
            if timeout is not None and not 30 <= timeout <= 7200:
                yield Finding(
                    (*path, "HeartbeatTimeout"),
                    f"{name}: lifecycle hook HeartbeatTimeout is {timeout} s; the range is 30 to 7200 s. Fix: use a "
                    "value in range and extend long waits with RecordLifecycleActionHeartbeat.",
                )
            result = hook.get("DefaultResult")
            if isinstance(result, str) and result not in ("CONTINUE", "ABANDON"):
                yield Finding(
                    (*path, "DefaultResult"),
                    f"{name}: lifecycle hook DefaultResult is {result!r}; valid values are CONTINUE and ABANDON.",
                )


class WarmPoolRestrictions(_base.DeployRule):
    id = "E9304"
    shortdesc = "No warm pool on groups with a mixed instances policy or Spot Instances"
    description = (
        "A warm pool cannot be added to an Auto Scaling group that has a mixed instances policy or a launch "
        "template that requests Spot Instances."
    )
    source_url = "https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_PutWarmPool.html"
    source_title = "Amazon EC2 Auto Scaling API Reference: PutWarmPool"
    resource_types = ("AWS::AutoScaling::WarmPool",)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        group = template.target(_base.props(resource).get("AutoScalingGroupName"), ASG)
        if group is None:
            return
        properties = _base.props(group[1])
        if properties.get("MixedInstancesPolicy") is not None:
            yield Finding(
                ("Properties", "AutoScalingGroupName"),
                f"{name}: Auto Scaling group {group[0]} has a MixedInstancesPolicy; warm pools are not supported "
                "on such groups. Fix: drop the warm pool or use a single launch template.",
            )
            return
        lt = _base.launch_template(template, properties.get("LaunchTemplate"))
        if lt is None:
            return
        market = _base.as_dict(_base.launch_template_data(lt[1]).get("InstanceMarketOptions")) or {}
        if market.get("MarketType") == "spot":
            yield Finding(
                ("Properties", "AutoScalingGroupName"),
                f"{name}: Auto Scaling group {group[0]} launches Spot Instances (launch template {lt[0]} "
                "InstanceMarketOptions.MarketType 'spot'); warm pools are not supported. Fix: drop the warm pool.",
            )


class GroupSizes(_base.DeployRule):
    id = "E9305"
    shortdesc = "Auto Scaling group MinSize <= DesiredCapacity <= MaxSize"
    description = "DesiredCapacity must be between MinSize and MaxSize, and MinSize cannot exceed MaxSize."
    source_url = "https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_CreateAutoScalingGroup.html"
    source_title = "Amazon EC2 Auto Scaling API Reference: CreateAutoScalingGroup"
    resource_types = (ASG,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        properties = _base.props(resource)
        low, high = _base.as_int(properties.get("MinSize")), _base.as_int(properties.get("MaxSize"))
        desired = _base.as_int(properties.get("DesiredCapacity"))
        if low is not None and high is not None and low > high:
            yield Finding(
                ("Properties", "MinSize"),
                f"{name}: MinSize {low} is greater than MaxSize {high}. Fix: MinSize <= MaxSize.",
            )
        elif desired is not None and (
            (low is not None and desired < low) or (high is not None and desired > high)
        ):
            yield Finding(
                ("Properties", "DesiredCapacity"),
                f"{name}: DesiredCapacity {desired} is outside MinSize {low} .. MaxSize {high}. Fix: keep it "
                "between them.",
            )


class LaunchTemplateVersion(_base.DeployRule):
    id = "E9306"
    shortdesc = "Auto Scaling group launch template Version is required and cannot be $Latest/$Default"
    description = (
        "CloudFormation requires LaunchTemplate.Version on an Auto Scaling group and does not support $Latest or "
        "$Default; use Fn::GetAtt LatestVersionNumber or DefaultVersionNumber."
    )
    source_url = (
        "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
        "aws-properties-autoscaling-autoscalinggroup-launchtemplatespecification.html"
    )
    source_title = "AWS CloudFormation: AWS::AutoScaling::AutoScalingGroup LaunchTemplateSpecification"
    resource_types = (ASG,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        spec = _base.as_dict(_base.props(resource).get("LaunchTemplate"))
        if spec is None:
            return
        version = spec.get("Version")
        if version is None:
            yield Finding(
                ("Properties", "LaunchTemplate"),
                f"{name}: LaunchTemplate has no Version. Fix: set Version to Fn::GetAtt "
                "<LaunchTemplate>.LatestVersionNumber.",
            )
        elif isinstance(version, str) and version in ("$Latest", "$Default"):
            yield Finding(
                ("Properties", "LaunchTemplate", "Version"),
                f"{name}: LaunchTemplate.Version is {version!r}, which CloudFormation does not support for Auto "
                "Scaling groups. Fix: use Fn::GetAtt <LaunchTemplate>.LatestVersionNumber.",
            )
