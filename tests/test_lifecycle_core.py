"""The lifecycle core on small templates: replacement from the schemas, the services' update rules,
propagation along references and across stacks, retry and teardown findings."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cdk_neuron.lifecycle import (
    EMPTIES_METADATA,
    Change,
    impact,
    key_findings,
    retry_findings,
    stateful_losses,
    teardown_findings,
)
from cdk_neuron.lifecycle import schema as lifecycle_schema


def _template(**resources: dict[str, Any]) -> dict[str, Any]:
    return {"Resources": resources}


def _one(before: dict[str, Any], after: dict[str, Any], **options: Any) -> dict[str, Any]:
    (result,) = impact({"S": before}, {"S": after}, **options)
    return {r.logical_id: r for r in result.resources}


def _fs(**props: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::EFS::FileSystem",
        "DeletionPolicy": "RetainExceptOnCreate",
        "UpdateReplacePolicy": "Retain",
        "Properties": {"Encrypted": True, **props},
    }


def _mount_target() -> dict[str, Any]:
    return {
        "Type": "AWS::EFS::MountTarget",
        "Properties": {"FileSystemId": {"Ref": "Fs"}, "SubnetId": "subnet-1"},
    }


# -- replacement -------------------------------------------------------------------------------------


def test_a_create_only_change_replaces_and_spreads_along_references() -> None:
    before = _template(Fs=_fs(AvailabilityZoneName="us-east-1a"), Mt=_mount_target())
    after = _template(Fs=_fs(), Mt=_mount_target())
    found = _one(before, after)
    assert found["Fs"].change is Change.REPLACED
    assert found["Fs"].reasons == ("AvailabilityZoneName changes (create-only)",)
    assert found["Fs"].data_at_risk == (
        "Fs (AWS::EFS::FileSystem) is replaced: the old one and its files stay in the account, outside the stack"
    )
    # The mount target names the file system in a create-only property: replaced with it.
    assert found["Mt"].change is Change.REPLACED
    assert found["Mt"].reasons == ("FileSystemId changes (create-only)",)
    assert [r.logical_id for _, r in stateful_losses(impact({"S": before}, {"S": after}))] == ["Fs"]
    # What runs through the old mount target stops with it.
    assert str(found["Mt"].restarts).startswith("every NFS mount through it: clients mounted through the old")


def test_an_updatable_change_is_an_update_and_an_identical_template_changes_nothing() -> None:
    before = _template(Fs=_fs(ThroughputMode="bursting"), Mt=_mount_target())
    after = _template(Fs=_fs(ThroughputMode="elastic"), Mt=_mount_target())
    found = _one(before, after)
    assert (found["Fs"].change, found["Fs"].reasons) == (Change.UPDATED, ("ThroughputMode changes",))
    assert found["Mt"].change is Change.UNCHANGED
    assert {r.change for r in _one(before, before).values()} == {Change.UNCHANGED}


def test_a_replaced_stateful_resource_without_retention_loses_its_data() -> None:
    fs = _fs(AvailabilityZoneName="a")
    del fs["UpdateReplacePolicy"]
    found = _one(
        _template(Fs=fs), _template(Fs=_fs(AvailabilityZoneName="b") | {"UpdateReplacePolicy": "Delete"})
    )
    assert found["Fs"].data_at_risk == (
        "Fs (AWS::EFS::FileSystem) is replaced: the old one is deleted with its files"
    )


def test_removed_resources_are_deleted_or_kept_by_their_deletion_policy() -> None:
    bucket = {"Type": "AWS::S3::Bucket", "DeletionPolicy": "Delete"}
    kept = {"Type": "AWS::Logs::LogGroup", "DeletionPolicy": "RetainExceptOnCreate"}
    found = _one(_template(B=bucket, L=kept), _template(N={"Type": "AWS::SNS::Topic"}))
    assert found["B"].change is Change.DELETED
    assert (
        found["B"].data_at_risk
        == "B (AWS::S3::Bucket) is removed from the stack: the old one is deleted with its objects"
    )
    assert found["L"].change is Change.KEPT
    assert found["N"].change is Change.ADDED


def test_removed_compute_says_what_stops() -> None:
    group = {"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": {"MaxSize": "2", "MinSize": "1"}}
    found = _one(_template(G=group, T={"Type": "AWS::SNS::Topic"}), _template())
    assert found["G"].restarts == "removed from the stack: every instance of the group stops"
    access_point = {"Type": "AWS::EFS::AccessPoint", "Properties": {"FileSystemId": "fs-1"}}
    assert str(_one(_template(A=access_point), _template())["A"].restarts).startswith(
        "removed from the stack: every NFS mount through it stops"
    )
    listener = {"Type": "AWS::ElasticLoadBalancingV2::Listener", "Properties": {"Port": 80}}
    assert _one(_template(L=listener), _template())["L"].restarts == (
        "removed from the stack: every connection to the listener's port stops"
    )
    assert found["T"].restarts is None


def test_replacing_a_resource_that_keeps_its_custom_name_fails() -> None:
    """A vault's encryption key is create-only and CloudFormation requires its name: a new key replaces
    the vault under the name the old one holds, and the update fails."""

    def vault(key: str, name: str = "Checkpoints") -> dict[str, Any]:
        return {
            "Type": "AWS::Backup::BackupVault",
            "UpdateReplacePolicy": "Retain",
            "Properties": {"BackupVaultName": name, "EncryptionKeyArn": key},
        }

    found = _one(_template(V=vault("arn:key/1")), _template(V=vault("arn:key/2")))["V"]
    assert found.change is Change.REPLACED
    assert str(found.fails).startswith("it is replaced but keeps its BackupVaultName: CloudFormation creates")
    assert any("aws-properties-name.html" in s.url for s in found.sources)
    renamed = _one(_template(V=vault("arn:key/1")), _template(V=vault("arn:key/2", "Checkpoints2")))["V"]
    assert (renamed.change, renamed.fails) == (Change.REPLACED, None)
    # A generated name (no name property) is CloudFormation's to change.
    assert _one(_template(Fs=_fs(AvailabilityZoneName="a")), _template(Fs=_fs()))["Fs"].fails is None


def test_a_type_change_replaces() -> None:
    found = _one(_template(X={"Type": "AWS::SNS::Topic"}), _template(X={"Type": "AWS::SQS::Queue"}))
    assert (found["X"].change, found["X"].reasons) == (Change.REPLACED, ("type changes to AWS::SQS::Queue",))


def test_list_items_match_star_pointers() -> None:
    # A create-only pointer that covers a list: SageMaker ProductionVariants is create-only as a whole.
    config = {
        "Type": "AWS::SageMaker::EndpointConfig",
        "Properties": {"ProductionVariants": [{"InstanceType": "a"}]},
    }
    changed = json.loads(json.dumps(config))
    changed["Properties"]["ProductionVariants"][0]["InstanceType"] = "b"
    assert _one(_template(C=config), _template(C=changed))["C"].change is Change.REPLACED


# -- service rules -----------------------------------------------------------------------------------


def _launch_template(image: Any) -> dict[str, Any]:
    return {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {"ImageId": image}}}


def _compute_environment(**update_policy: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::Batch::ComputeEnvironment",
        "Properties": {
            "Type": "managed",
            "ReplaceComputeEnvironment": False,
            "UpdatePolicy": update_policy,
            "ComputeResources": {
                "AllocationStrategy": "BEST_FIT_PROGRESSIVE",
                "MaxvCpus": 128,
                "LaunchTemplate": {
                    "LaunchTemplateId": {"Ref": "Lt"},
                    "Version": {"Fn::GetAtt": ["Lt", "LatestVersionNumber"]},
                },
            },
        },
    }


def test_batch_refuses_an_infrastructure_update_without_its_strategy_or_service_linked_role() -> None:
    before, after = _compute_environment(), _compute_environment()
    after["Properties"]["ComputeResources"]["InstanceTypes"] = ["trn1n.32xlarge"]
    assert _one(_template(Ce=before), _template(Ce=after))["Ce"].fails is None
    for key, value in (("AllocationStrategy", "BEST_FIT"), ("ServiceRole", "arn:aws:iam::1:role/batch")):
        old, new = json.loads(json.dumps(before)), json.loads(json.dumps(after))
        for template in (old, new):
            target = (
                template["Properties"]["ComputeResources"]
                if key == "AllocationStrategy"
                else template["Properties"]
            )
            target[key] = value
        found = _one(_template(Ce=old), _template(Ce=new))["Ce"]
        assert found.change is Change.UPDATED
        assert str(found.fails).startswith(
            "an infrastructure update (InstanceTypes) needs the AWSServiceRoleForBatch"
        )


def test_kms_refuses_to_change_what_a_key_is() -> None:
    key = {"Type": "AWS::KMS::Key", "Properties": {"KeySpec": "SYMMETRIC_DEFAULT", "EnableKeyRotation": True}}
    rotated = json.loads(json.dumps(key))
    rotated["Properties"]["EnableKeyRotation"] = False
    assert _one(_template(K=key), _template(K=rotated))["K"].fails is None
    hmac = json.loads(json.dumps(key))
    hmac["Properties"]["KeySpec"] = "HMAC_256"
    found = _one(_template(K=key), _template(K=hmac))["K"]
    assert str(found.fails).startswith("KeySpec cannot change on an existing KMS key: the update fails")


def test_a_new_launch_template_version_is_a_batch_infrastructure_update_with_the_job_deadline() -> None:
    before = _template(Lt=_launch_template("ami-1"), Ce=_compute_environment(JobExecutionTimeoutMinutes=7200))
    after = _template(Lt=_launch_template("ami-2"), Ce=_compute_environment(JobExecutionTimeoutMinutes=7200))
    found = _one(before, after)
    assert found["Lt"].change is Change.UPDATED
    assert found["Ce"].change is Change.UPDATED
    assert found["Ce"].reasons == ("ComputeResources/LaunchTemplate/Version changes",)
    assert found["Ce"].restarts == (
        "a Batch infrastructure update (LaunchTemplate): every instance is replaced; running jobs may run 7200 more "
        "minutes (120 h), then are terminated; queued jobs wait for the new instances"
    )


def test_batch_defaults_and_terminate_and_replace() -> None:
    before = _template(Lt=_launch_template("ami-1"), Ce=_compute_environment())
    after = _template(Lt=_launch_template("ami-2"), Ce=_compute_environment())
    assert "may run 30 more minutes (0.5 h)" in str(_one(before, after)["Ce"].restarts)
    terminate = _template(Lt=_launch_template("ami-2"), Ce=_compute_environment(TerminateJobsOnUpdate=True))
    assert "running jobs are terminated at once" in str(_one(before, terminate)["Ce"].restarts)
    # ReplaceComputeEnvironment defaults to true: CloudFormation replaces the environment instead.
    replacing = json.loads(json.dumps(after))
    del replacing["Resources"]["Ce"]["Properties"]["ReplaceComputeEnvironment"]
    found = _one(before, replacing)
    assert found["Ce"].change is Change.REPLACED
    # Scaling the environment restarts nothing.
    scaled = json.loads(json.dumps(before))
    scaled["Resources"]["Ce"]["Properties"]["ComputeResources"]["MaxvCpus"] = 256
    assert _one(before, scaled)["Ce"].restarts is None


def _group(policy: dict[str, Any], desired: Any = None, percent: int | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {
        "MinSize": "2",
        "MaxSize": "8",
        "LaunchTemplate": {
            "LaunchTemplateId": {"Ref": "Lt"},
            "Version": {"Fn::GetAtt": ["Lt", "LatestVersionNumber"]},
        },
    }
    if desired is not None:
        props["DesiredCapacity"] = desired
    creation: dict[str, Any] = {"ResourceSignal": {"Count": 2}}
    if percent is not None:
        creation["AutoScalingCreationPolicy"] = {"MinSuccessfulInstancesPercent": percent}
    return {
        "Type": "AWS::AutoScaling::AutoScalingGroup",
        "UpdatePolicy": policy,
        "CreationPolicy": creation,
        "Properties": props,
    }


@pytest.mark.parametrize(
    ("desired", "percent", "expected"),
    [
        (None, None, "the new group starts at MinSize 2: any capacity above it is gone at the swap; the old group "
         "is deleted once 2 instance(s) have signalled ready"),
        ({"Fn::GetAtt": ["Capacity", "Desired"]}, 100, "the new group starts at the capacity the running group has "
         "(DesiredCapacity read at deploy); the old group is deleted once 100% of its instances have signalled ready"),
        ("4", None, "the new group starts at DesiredCapacity 4; the old group is deleted once 2 instance(s) have "
         "signalled ready"),
    ],
)  # fmt: skip
def test_a_replacing_update_replaces_the_group_and_says_what_capacity_it_starts_with(
    desired: Any, percent: int | None, expected: str
) -> None:
    policy = {"AutoScalingReplacingUpdate": {"WillReplace": True}}
    before = _template(Lt=_launch_template("ami-1"), G=_group(policy, desired, percent))
    after = _template(Lt=_launch_template("ami-2"), G=_group(policy, desired, percent))
    found = _one(before, after)
    assert found["G"].change is Change.REPLACED
    assert found["G"].restarts == f"a new Auto Scaling group replaces the old one; {expected}"


def test_a_rolling_update_updates_the_group_in_batches() -> None:
    policy = {"AutoScalingRollingUpdate": {"MaxBatchSize": 1, "MinInstancesInService": 2}}
    before = _template(Lt=_launch_template("ami-1"), G=_group(policy))
    after = _template(Lt=_launch_template("ami-2"), G=_group(policy))
    found = _one(before, after)
    assert found["G"].change is Change.UPDATED
    assert found["G"].restarts == "every instance, 1 at a time, keeping 2 in service (rolling update)"
    # Capacity changes are not launch-template changes: nothing restarts.
    resized = json.loads(json.dumps(before))
    resized["Resources"]["G"]["Properties"]["MaxSize"] = "9"
    assert _one(before, resized)["G"].restarts is None


@pytest.mark.parametrize(
    ("preferences", "expected"),
    [
        ({}, "keeping 90% to 100% of the desired capacity healthy, terminating before launching"),
        ({"MinHealthyPercentage": 100, "MaxHealthyPercentage": 150}, "keeping 100% to 150% of the desired "
         "capacity healthy, launching each replacement before terminating the instance it replaces"),
    ],
)  # fmt: skip
def test_an_instance_refresh_keeps_the_group_and_its_capacity(
    preferences: dict[str, int], expected: str
) -> None:
    policy = {"AutoScalingInstanceRefresh": {"Strategy": "Rolling", "Preferences": preferences}}
    found = _one(
        _template(Lt=_launch_template("ami-1"), G=_group(policy)),
        _template(Lt=_launch_template("ami-2"), G=_group(policy)),
    )
    assert found["G"].change is Change.UPDATED
    assert (
        found["G"].restarts
        == f"every instance, by an instance refresh {expected}; the group and its capacity stay"
    )


def _endpoint_stack(instance_type: str, config: str) -> dict[str, Any]:
    return _template(
        **{
            config: {
                "Type": "AWS::SageMaker::EndpointConfig",
                "Properties": {
                    "ProductionVariants": [{"VariantName": "AllTraffic", "InstanceType": instance_type}]
                },
            },
            "Ep": {
                "Type": "AWS::SageMaker::Endpoint",
                "Properties": {"EndpointConfigName": {"Fn::GetAtt": [config, "EndpointConfigName"]}},
            },
            "Scaling": {
                "Type": "AWS::ApplicationAutoScaling::ScalableTarget",
                "Properties": {
                    "ResourceId": {
                        "Fn::Join": [
                            "",
                            ["endpoint/", {"Fn::GetAtt": ["Ep", "EndpointName"]}, "/variant/AllTraffic"],
                        ]
                    }
                },
            },
        }
    )


def test_sagemaker_refuses_a_new_instance_type_on_a_scaled_variant_but_not_a_new_model() -> None:
    found = _one(_endpoint_stack("ml.inf2.xlarge", "Config"), _endpoint_stack("ml.inf2.8xlarge", "Config"))
    assert found["Config"].change is Change.REPLACED
    assert found["Ep"].change is Change.UPDATED
    assert found["Ep"].fails is not None and found["Ep"].fails.startswith(
        "variant AllTraffic changes instance type"
    )
    same_type = _one(
        _endpoint_stack("ml.inf2.xlarge", "Config"), _endpoint_stack("ml.inf2.xlarge", "Config2")
    )
    assert same_type["Ep"].change is Change.UPDATED
    assert same_type["Ep"].fails is None
    assert "SageMaker starts the new configuration's instances" in str(same_type["Ep"].restarts)


def test_a_replaced_endpoint_says_the_capacity_it_starts_with() -> None:
    before = _endpoint_stack("ml.inf2.xlarge", "Config")
    after = _endpoint_stack("ml.inf2.8xlarge", "Config")
    after["Resources"]["Config"]["Properties"]["ProductionVariants"][0]["InitialInstanceCount"] = 2
    after["Resources"]["Ep"]["Properties"]["EndpointName"] = "fleet-inf2-8xlarge"
    found = _one(before, after)["Ep"]
    assert (found.change, found.fails) == (Change.REPLACED, None)
    assert found.restarts == (
        "the endpoint: a new one (new name) serves once it is in service; it starts with AllTraffic 2 "
        "instance(s) (InitialInstanceCount), not what auto scaling had grown the old one to, and scales from there"
    )


# -- across stacks and deploy-time values -------------------------------------------------------------


def test_a_replaced_producer_changes_the_consumer_through_its_stack_output() -> None:
    producer_before = _template(Fs=_fs(AvailabilityZoneName="a")) | {
        "Outputs": {"FsId": {"Value": {"Ref": "Fs"}}}
    }
    producer_after = _template(Fs=_fs()) | {"Outputs": {"FsId": {"Value": {"Ref": "Fs"}}}}
    alarm = {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "Dimensions": [
                {
                    "Name": "FileSystemId",
                    "Value": {"Fn::GetStackOutput": {"StackName": "P", "OutputName": "FsId"}},
                }
            ]
        },
    }
    results = {
        s.stack: s
        for s in impact(
            {"P": producer_before, "C": _template(A=alarm)}, {"P": producer_after, "C": _template(A=alarm)}
        )
    }
    assert results["P"].changed_outputs == {"FsId"}
    assert results["C"].find("A").change is Change.UPDATED
    assert results["C"].status == "changed"


def test_floating_ssm_values_are_reported_and_changed_only_when_asked() -> None:
    template = _template(Lt=_launch_template({"Ref": "Ami"})) | {
        "Parameters": {
            "Ami": {
                "Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>",
                "Default": "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id",
            }
        }
    }
    (calm,) = impact({"S": template}, {"S": template})
    assert calm.status == "unchanged"
    assert calm.floating == (
        ("Ami", "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"),
    )
    (released,) = impact({"S": template}, {"S": template}, new_releases=True)
    assert released.find("Lt").change is Change.UPDATED
    pinned = json.loads(json.dumps(template))
    pinned["Parameters"]["Ami"]["Default"] = (
        "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/al2023-ami-ecs-neuron-hvm-2023.0.20260918-kernel-6.1-x86_64/image_id"
    )
    (still,) = impact({"S": pinned}, {"S": pinned}, new_releases=True)
    assert still.floating == () and still.status == "unchanged"


def test_a_stack_in_one_side_only_is_created_or_deleted() -> None:
    results = {
        s.stack: s.status
        for s in impact({"Old": _template(T={"Type": "AWS::SNS::Topic"})}, {"New": _template()})
    }
    assert results == {"Old": "deleted", "New": "created"}


# -- retry and teardown -------------------------------------------------------------------------------


def _log_group(policy: str, name: Any = None) -> dict[str, Any]:
    props = {} if name is None else {"LogGroupName": name}
    return {"Type": "AWS::Logs::LogGroup", "DeletionPolicy": policy, "Properties": props}


def test_retry_refuses_retain_with_a_fixed_name_only() -> None:
    stacks = {
        "S": _template(
            Named=_log_group("Retain", "/x"),
            Joined=_log_group("Retain", {"Fn::Join": ["", ["/x/", {"Ref": "AWS::StackName"}]]}),
            Retryable=_log_group("RetainExceptOnCreate", "/x"),
            Generated=_log_group("Retain"),
            Deleted=_log_group("Delete", "/x"),
        )
    }
    assert sorted(f.logical_id for f in retry_findings(stacks)) == ["Joined", "Named"]
    assert "RETAIN_ON_UPDATE_OR_DELETE" in retry_findings(stacks)[0].message


def test_teardown_finds_what_destroy_fails_on_or_leaves() -> None:
    bucket = {"Type": "AWS::S3::Bucket", "DeletionPolicy": "Delete"}
    stacks = {
        "S": _template(
            Emptied=bucket,
            AutoDelete={
                "Type": "Custom::S3AutoDeleteObjects",
                "Properties": {"BucketName": {"Ref": "Emptied"}},
            },
            Declared=bucket,
            Mirror={"Type": "Custom::Copy", "Metadata": {EMPTIES_METADATA: [{"Ref": "Declared"}]}},
            Full=bucket,
            Vault={"Type": "AWS::Backup::BackupVault", "DeletionPolicy": "Delete"},
            Kept=_log_group("RetainExceptOnCreate"),
            Fn={"Type": "AWS::Lambda::Function", "Properties": {}},
            Logged={
                "Type": "AWS::Lambda::Function",
                "Properties": {"LoggingConfig": {"LogGroup": {"Ref": "G"}}},
            },
            Named={"Type": "AWS::Lambda::Function", "Properties": {}},
            NamedGroup=_log_group("Delete", {"Fn::Join": ["", ["/aws/lambda/", {"Ref": "Named"}]]}),
        )
    }
    found = {f.logical_id: f.message for f in teardown_findings(stacks)}
    assert sorted(found) == ["Fn", "Full", "Kept", "Vault"]
    assert found["Kept"] == "kept after cdk destroy (DeletionPolicy RetainExceptOnCreate)"
    assert found["Full"].endswith("nothing empties it")
    assert teardown_findings(stacks, keeps={"S/Kept", "S/Fn", "S/Full", "S/Vault"}) == []


def test_a_deleted_key_under_kept_data_is_found() -> None:
    key = {"Type": "AWS::KMS::Key", "DeletionPolicy": "Delete"}
    vault = {
        "Type": "AWS::Backup::BackupVault",
        "DeletionPolicy": "Retain",
        "Properties": {"EncryptionKeyArn": {"Fn::GetAtt": ["Key", "Arn"]}},
    }
    (finding,) = key_findings({"S": _template(Key=key, Vault=vault)})
    assert (finding.logical_id, finding.check) == ("Vault", "teardown")
    assert "encrypted with Key, which is deleted" in finding.message
    kept_key = key | {"DeletionPolicy": "RetainExceptOnCreate"}
    assert key_findings({"S": _template(Key=kept_key, Vault=vault)}) == []


# -- the schema table ---------------------------------------------------------------------------------


def test_the_create_only_table_is_the_installed_cfn_lint_data() -> None:
    from tools.create_only import TABLE, build, render

    assert TABLE.read_text() == render(build()), "run: python -m tools.create_only --write"


def test_schema_lookups() -> None:
    assert lifecycle_schema.create_only("AWS::EFS::FileSystem") == (
        ("AvailabilityZoneName",),
        ("Encrypted",),
        ("KmsKeyId",),
        ("PerformanceMode",),
    )
    assert lifecycle_schema.create_only("Custom::Anything") == ()
    assert lifecycle_schema.name_property("AWS::Logs::LogGroup") == "LogGroupName"
    assert lifecycle_schema.name_property("AWS::EFS::FileSystem") is None
    assert lifecycle_schema.source()["cfn_lint"]


# -- SageMaker HyperPod ------------------------------------------------------------------------------


def _hyperpod(workers: int, *, subnet: str = "subnet-1", name: str = "training") -> dict[str, Any]:
    return _template(
        Hp={
            "Type": "AWS::SageMaker::Cluster",
            "Properties": {
                "ClusterName": name,
                "VpcConfig": {"SecurityGroupIds": ["sg-1"], "Subnets": [subnet]},
                "InstanceGroups": [
                    {"InstanceGroupName": "controller", "InstanceCount": 1, "InstanceType": "ml.m5.xlarge"},
                    {
                        "InstanceGroupName": "trn",
                        "InstanceCount": workers,
                        "InstanceType": "ml.trn1.32xlarge",
                    },
                ],
            },
        }
    )


def test_hyperpod_scales_in_place_and_scaling_down_stops_the_jobs_on_removed_nodes() -> None:
    up = _one(_hyperpod(0), _hyperpod(4))
    assert up["Hp"].change is Change.UPDATED
    assert up["Hp"].restarts is None
    down = _one(_hyperpod(4), _hyperpod(2))
    assert down["Hp"].change is Change.UPDATED
    assert str(down["Hp"].restarts).startswith("the nodes HyperPod removes from trn: Slurm jobs on them fail")


def test_new_lifecycle_scripts_restart_nothing_and_say_they_reach_only_new_nodes() -> None:
    def scripted(prefix: str) -> dict[str, Any]:
        template = _hyperpod(2)
        for group in template["Resources"]["Hp"]["Properties"]["InstanceGroups"]:
            group["LifeCycleConfig"] = {
                "SourceS3Uri": f"s3://sagemaker-x/lifecycle/{prefix}/",
                "OnInitComplete": "a.sh",
            }
        return template

    found = _one(scripted("aaaa"), scripted("bbbb"))["Hp"]
    assert found.change is Change.UPDATED
    assert str(found.restarts).startswith(
        "nothing now: the new lifecycle scripts of controller, trn (settings, node programs, job image) reach "
        "only nodes HyperPod creates later"
    )
    assert "update-cluster-software" in str(found.restarts)
    assert found.sources[-1].url.endswith(
        "sagemaker-hyperpod-lifecycle-best-practices-slurm-slurm-update-cluster-lifecycle.html"
    )
    assert _one(scripted("aaaa"), scripted("aaaa"))["Hp"].restarts is None


@pytest.mark.parametrize("change", [{"subnet": "subnet-2"}, {"name": "training2"}])
def test_hyperpod_replaces_the_cluster_on_a_create_only_change(change: dict[str, str]) -> None:
    found = _one(_hyperpod(2), _hyperpod(2, **change))
    assert found["Hp"].change is Change.REPLACED
    assert "every node of the HyperPod cluster: a new cluster" in str(found["Hp"].restarts)


def test_a_new_volume_key_on_an_existing_hyperpod_group_fails() -> None:
    def keyed(key: str, workers: int = 2) -> dict[str, Any]:
        template = _hyperpod(workers)
        group = template["Resources"]["Hp"]["Properties"]["InstanceGroups"][1]
        group["InstanceStorageConfigs"] = [
            {"EbsVolumeConfig": {"VolumeSizeInGB": 500, "VolumeKmsKeyId": key}}
        ]
        return template

    found = _one(keyed("key-1"), keyed("key-2"))["Hp"]
    assert found.change is Change.UPDATED
    assert found.fails is not None and "the volume key of trn changes" in found.fails
    scaled = _one(keyed("key-1"), keyed("key-1", workers=4))["Hp"]
    assert scaled.change is Change.UPDATED and scaled.fails is None


def test_a_hyperpod_replacement_that_keeps_its_name_fails() -> None:
    """CreateCluster refuses a name that exists (ResourceInUse), and CloudFormation creates the
    replacement before deleting the old cluster: a VpcConfig change must come with a new name."""
    kept = _one(_hyperpod(2), _hyperpod(2, subnet="subnet-2"))["Hp"]
    assert kept.fails is not None and "keeps its ClusterName" in kept.fails
    renamed = _one(_hyperpod(2), _hyperpod(2, subnet="subnet-2", name="training2"))["Hp"]
    assert renamed.change is Change.REPLACED and renamed.fails is None
