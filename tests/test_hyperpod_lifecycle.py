"""The HyperPod lifecycle script under bash with stubs, and the function that writes it to S3 (moto)."""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from handler_support import event, load_handler
from moto import mock_aws
from node_sandbox import Sandbox, index_of

from cdk_neuron.node_programs import FILES_DIR, render_settings

PREFIX = "lifecycle/0123456789abcdef/"


def _bundle_zip(target: Path) -> None:
    """The node-program bundle as CDK zips a directory asset (paths relative to the directory)."""
    with zipfile.ZipFile(target, "w") as archive:
        for file in sorted(FILES_DIR.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                archive.write(file, file.relative_to(FILES_DIR))


def _lifecycle_dir(sandbox: Sandbox, tmp_path: Path, settings: Mapping[str, str | int | None]) -> Path:
    """The prefix as HyperPod copies it to a node: the entry script, lib/common.sh, the settings and
    the node-program bundle."""
    where = tmp_path / "sagemaker-lifecycle"
    (where / "lib").mkdir(parents=True)
    shutil.copy(FILES_DIR / "hyperpod" / "on-init-complete.sh", where / "on-init-complete.sh")
    shutil.copy(FILES_DIR / "hyperpod" / "controller.sh", where / "controller.sh")
    shutil.copy(FILES_DIR / "lib" / "common.sh", where / "lib" / "common.sh")
    _bundle_zip(where / "node-programs.zip")
    (where / "hyperpod.env").write_text(render_settings({"NODE_PROGRAMS": "node-programs.zip", **settings}))
    (where / "training-profile.env").write_text(render_settings({"FI_PROVIDER": "efa", "TP_DEGREE": 32}))
    return where


CHECKPOINTS = {
    "CLUSTER_NAME": "dev-training",
    "CHECKPOINT_FILE_SYSTEM_ID": "fs-0123456789abcdef0",
    "CHECKPOINT_ACCESS_POINT_ID": "fsap-0123456789abcdef0",
    "CHECKPOINT_DIR": "/checkpoints",
    "EFS_UTILS_PACKAGE": "amazon-efs-utils.deb",
    "EFS_UTILS_UBUNTU": "22.04",
}
# /etc/os-release of a HyperPod Slurm node (Ubuntu 22.04, cdk_neuron.training.hyperpod_facts.UBUNTU_RELEASE).
OS_RELEASE = 'NAME="Ubuntu"\nVERSION_ID="22.04"\nVERSION_CODENAME=jammy\nID=ubuntu\n'


# apt-get as it treats local packages offline: amazon-efs-utils depends on stunnel4 and nfs-common
# (aws/efs-utils dist/amazon-efs-utils.control), which the HyperPod image may lack; with --no-download
# a dependency that is neither installed (a marker file here) nor among the given .debs fails the
# install, naming it, and nothing is installed.
APT_GET = """debs=" $* "
for dep in stunnel4 nfs-common; do
  if [ ! -e "$CDK_NEURON_ROOT/installed-$dep" ] && [[ "$debs" != *"/$dep"_* ]]; then
    echo "amazon-efs-utils : Depends: $dep but it is not installable" >&2
    echo "E: Unable to correct problems, you have held broken packages." >&2
    exit 100
  fi
done
printf '#!/bin/bash\\nexit 0\\n' > {bin}/mount.efs; chmod +x {bin}/mount.efs"""


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = Sandbox(tmp_path)
    # The HyperPod Slurm image is Ubuntu without efs-utils: the ECS AMI's mount.efs stub does not apply.
    (box.bin / "mount.efs").unlink()
    box.stub("apt-get", APT_GET.format(bin=box.bin))
    box.write("/etc/os-release", OS_RELEASE)
    return box


def test_installs_the_profile_without_checkpoints(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, {"CLUSTER_NAME": "dev-training"})
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode == 0, result.stderr
    assert (
        sandbox.file("/etc/cdk-neuron/training-profile.env").read_text() == "FI_PROVIDER=efa\nTP_DEGREE=32\n"
    )
    profile = sandbox.file("/etc/profile.d/cdk-neuron-training.sh").read_text()
    assert "set -a\n. /etc/cdk-neuron/training-profile.env\nset +a" in profile
    assert sandbox.calls("mount") == [] and sandbox.calls("apt-get") == []


def test_installs_the_job_programs_from_the_bundle_replacing_the_old_tree(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, {"CLUSTER_NAME": "dev-training"})
    stale = sandbox.write("/opt/cdk-neuron/hyperpod/dropped-by-a-newer-bundle.sh", "#!/bin/bash\n")
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode == 0, result.stderr
    for path in (
        "hyperpod/slurm-step.sh",
        "hyperpod/slurm_order.py",
        "training/launcher.sh",
        "training/rank_order.py",
    ):
        assert sandbox.file(f"/opt/cdk-neuron/{path}").read_bytes() == (FILES_DIR / path).read_bytes()
    assert not stale.exists()
    assert not sandbox.file("/opt/cdk-neuron.new").exists()


def test_fails_the_node_without_the_bundle(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, {"CLUSTER_NAME": "dev-training"})
    (where / "node-programs.zip").unlink()
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode != 0
    assert "node-programs.zip is not in the lifecycle prefix" in result.stderr


def test_fails_the_node_when_the_bundle_lacks_the_step(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, {"CLUSTER_NAME": "dev-training"})
    with zipfile.ZipFile(where / "node-programs.zip", "w") as archive:
        archive.writestr("training/launcher.sh", "#!/bin/bash\n")
    before = sandbox.file("/opt/cdk-neuron/hyperpod/slurm-step.sh").read_bytes()
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode != 0
    assert "node-programs.zip holds no hyperpod/slurm-step.sh" in result.stderr
    # The programs a previous run installed stay in place.
    assert sandbox.file("/opt/cdk-neuron/hyperpod/slurm-step.sh").read_bytes() == before


def _with_controller_program(where: Path) -> None:
    (where / "controller-program.sh").write_text("#!/bin/bash\necho smoke\n")
    (where / "controller-program.env").write_text("JOB_SCRIPT_B64=abc\n")


def test_the_controller_starts_its_program_in_the_background(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, {"CLUSTER_NAME": "dev-training"})
    _with_controller_program(where)
    sandbox.stub("systemd-run")
    sandbox.stub("systemctl", '[ "$1" = is-active ] && exit 3; exit 0')
    result = sandbox.run_script(str(where / "controller.sh"))
    assert result.returncode == 0, result.stderr
    assert sandbox.file("/etc/cdk-neuron/controller-program.sh").read_text() == "#!/bin/bash\necho smoke\n"
    assert sandbox.file("/etc/cdk-neuron/controller-program.env").read_text() == "JOB_SCRIPT_B64=abc\n"
    [run] = sandbox.calls("systemd-run")
    assert "--unit=cdk-neuron-controller-program --collect --no-block" in run
    assert "--setenv=CDK_NEURON_CONTROLLER_SETTINGS=/etc/cdk-neuron/controller-program.env" in run
    assert (
        ". /etc/profile.d/cdk-neuron-training.sh && exec /bin/bash /etc/cdk-neuron/controller-program.sh"
        in run
    )
    assert sandbox.calls("systemctl stop") == []


def test_a_rerun_stops_the_running_program_first(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, {"CLUSTER_NAME": "dev-training"})
    _with_controller_program(where)
    sandbox.stub("systemd-run")
    result = sandbox.run_script(str(where / "controller.sh"))  # the systemctl stub says "active"
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    assert index_of(calls, "systemctl stop cdk-neuron-controller-program.service") < index_of(
        calls, "systemd-run"
    )


def test_workers_do_not_start_the_controller_program(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, {"CLUSTER_NAME": "dev-training"})
    _with_controller_program(where)
    sandbox.stub("systemd-run")
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("systemd-run") == []
    assert not sandbox.file("/etc/cdk-neuron/controller-program.sh").exists()


def test_a_controller_that_cannot_start_its_program_fails(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, {"CLUSTER_NAME": "dev-training"})
    _with_controller_program(where)
    sandbox.stub("systemd-run", "exit 1")
    sandbox.stub("systemctl", '[ "$1" = is-active ] && exit 3; exit 0')
    result = sandbox.run_script(str(where / "controller.sh"))
    assert result.returncode != 0
    assert "cannot start the controller program (systemd-run)" in result.stderr


def test_installs_efs_utils_from_the_prefix_then_mounts_with_tls_and_iam(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, CHECKPOINTS)
    (where / "amazon-efs-utils.deb").write_bytes(b"deb")
    for dependency in ("stunnel4", "nfs-common"):  # this image has them
        sandbox.write(f"/installed-{dependency}", "")
    sandbox.stub("mountpoint", "exit 1")
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    assert index_of(calls, f"apt-get install -y --no-download {where}/amazon-efs-utils.deb") < index_of(
        calls, "mount -t efs"
    )
    assert "mount -t efs -o tls,iam,accesspoint=fsap-0123456789abcdef0 fs-0123456789abcdef0:/ " in "\n".join(
        calls
    )
    assert (
        "fs-0123456789abcdef0:/ /checkpoints efs _netdev,tls,iam,accesspoint=fsap-0123456789abcdef0 0 0"
        in (sandbox.file("/etc/fstab").read_text())
    )
    # Nothing beyond the VPC: apt-get installs only the local files.
    assert not any(c.startswith(("curl", "wget", "pip")) for c in calls)
    assert all("--no-download" in c for c in sandbox.calls("apt-get"))


def test_a_dependency_the_image_lacks_fails_the_node_by_name(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, CHECKPOINTS)
    (where / "amazon-efs-utils.deb").write_bytes(b"deb")
    sandbox.stub("mountpoint", "exit 1")
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode != 0
    assert "Depends: stunnel4 but it is not installable" in result.stderr
    assert "apt-get download stunnel4 nfs-common" in result.stderr  # the fix
    assert sandbox.calls("mount -t efs") == []


def test_a_directory_of_debs_brings_the_missing_dependencies(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(
        sandbox, tmp_path, {**CHECKPOINTS, "EFS_UTILS_PACKAGE": "amazon-efs-utils-debs.zip"}
    )
    with zipfile.ZipFile(where / "amazon-efs-utils-debs.zip", "w") as archive:
        for name in (
            "amazon-efs-utils-2.4.0-1_amd64.deb",
            "stunnel4_5.72-1_amd64.deb",
            "nfs-common_2.6.4_amd64.deb",
        ):
            archive.writestr(name, "deb")
    sandbox.stub("mountpoint", "exit 1")
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode == 0, result.stderr
    [install] = sandbox.calls("apt-get")
    assert install.startswith("apt-get install -y --no-download ")
    assert sorted(Path(p).name for p in install.split()[4:]) == [
        "amazon-efs-utils-2.4.0-1_amd64.deb",
        "nfs-common_2.6.4_amd64.deb",
        "stunnel4_5.72-1_amd64.deb",
    ]
    assert sandbox.calls("mount -t efs")


def test_an_archive_without_debs_fails_the_node(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(
        sandbox, tmp_path, {**CHECKPOINTS, "EFS_UTILS_PACKAGE": "amazon-efs-utils-debs.zip"}
    )
    with zipfile.ZipFile(where / "amazon-efs-utils-debs.zip", "w") as archive:
        archive.writestr("README", "no packages")
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode != 0
    assert "amazon-efs-utils-debs.zip holds no .deb file" in result.stderr


def test_an_image_with_efs_utils_installs_nothing(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, CHECKPOINTS)
    sandbox.stub("mount.efs")
    sandbox.stub("mountpoint", "exit 1")
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("apt-get") == []
    assert sandbox.calls("mount -t efs")


def test_fails_the_node_when_the_package_is_missing(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, CHECKPOINTS)
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode != 0
    assert "mount.efs is missing and amazon-efs-utils.deb is not in the lifecycle prefix" in result.stderr
    assert sandbox.calls("mount") == []


def test_fails_the_node_when_the_mount_fails(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, CHECKPOINTS)
    sandbox.stub("mount.efs")
    sandbox.stub("mountpoint", "exit 1")
    sandbox.stub("mount", "exit 32")
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode != 0
    assert "cannot mount fs-0123456789abcdef0:/ at /checkpoints" in result.stderr
    assert len(sandbox.calls("mount -t efs")) == 5  # retried
    assert not sandbox.file("/etc/fstab").exists()


def test_refuses_to_run_without_its_settings(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, {"CLUSTER_NAME": ""})
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode != 0
    assert "setting CLUSTER_NAME is empty" in result.stderr


# -- the function that writes the scripts -----------------------------------------------------------


@pytest.fixture
def writer(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, list[dict[str, Any]]]]:
    from cdk_support import use_fake_aws_credentials

    use_fake_aws_credentials(monkeypatch, "us-east-1")
    responses: list[dict[str, Any]] = []
    module = load_handler("lifecycle_scripts", monkeypatch, responses)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="sagemaker-cdkn-lifecycle")
        s3.create_bucket(Bucket="cdk-assets")
        s3.put_object(Bucket="cdk-assets", Key="abc.deb", Body=b"deb")
        yield module, responses


def _props(prefix: str = PREFIX) -> dict[str, Any]:
    return {
        "Bucket": "sagemaker-cdkn-lifecycle",
        "Prefix": prefix,
        "Files": {"on-init-complete.sh": "#!/bin/bash\n", "hyperpod.env": "CLUSTER_NAME=x\n"},
        "Copies": {"amazon-efs-utils.deb": "s3://cdk-assets/abc.deb"},
    }


def _keys() -> list[str]:
    listed = boto3.client("s3", region_name="us-east-1").list_objects_v2(Bucket="sagemaker-cdkn-lifecycle")
    return sorted(o["Key"] for o in listed.get("Contents", []))


def test_create_writes_the_files_and_copies(writer: tuple[ModuleType, list[dict[str, Any]]]) -> None:
    module, responses = writer
    module.handler(event("Create", _props()), None)
    assert [r["Status"] for r in responses] == ["SUCCESS"]
    assert responses[0]["PhysicalResourceId"] == f"s3://sagemaker-cdkn-lifecycle/{PREFIX}"
    assert _keys() == [
        f"{PREFIX}amazon-efs-utils.deb",
        f"{PREFIX}hyperpod.env",
        f"{PREFIX}on-init-complete.sh",
    ]
    body = (
        boto3.client("s3", region_name="us-east-1")
        .get_object(Bucket="sagemaker-cdkn-lifecycle", Key=f"{PREFIX}amazon-efs-utils.deb")["Body"]
        .read()
    )
    assert body == b"deb"


def test_an_update_to_a_new_prefix_then_deletes_the_old_one(
    writer: tuple[ModuleType, list[dict[str, Any]]],
) -> None:
    module, responses = writer
    module.handler(event("Create", _props()), None)
    new = "lifecycle/fedcba9876543210/"
    module.handler(event("Update", _props(new), responses[0]["PhysicalResourceId"]), None)
    module.handler(event("Delete", _props(), responses[0]["PhysicalResourceId"]), None)
    assert [r["Status"] for r in responses] == ["SUCCESS"] * 3
    assert all(k.startswith(new) for k in _keys()) and len(_keys()) == 3


def test_delete_of_a_failed_create_touches_nothing(writer: tuple[ModuleType, list[dict[str, Any]]]) -> None:
    module, _ = writer
    module.handler(event("Create", _props()), None)
    module.handler(event("Delete", _props(), "failed-req-0"), None)
    assert len(_keys()) == 3


def test_a_bad_prefix_or_copy_fails_the_deployment(writer: tuple[ModuleType, list[dict[str, Any]]]) -> None:
    module, responses = writer
    module.handler(event("Create", _props("lifecycle/x")), None)
    bad = _props()
    bad["Copies"] = {"p.deb": "https://example.com/p.deb"}
    module.handler(event("Create", bad), None)
    assert [r["Status"] for r in responses] == ["FAILED", "FAILED"]
    assert "must end with '/'" in responses[0]["Reason"]
    assert "is not an s3://bucket/key URI" in responses[1]["Reason"]


@pytest.mark.parametrize(
    ("os_release", "message"),
    [
        ('NAME="Ubuntu"\nVERSION_ID="24.04"\nVERSION_CODENAME=noble\n', "amazon-efs-utils.deb was built for Ubuntu 22.04, but this node runs Ubuntu 24.04: build amazon-efs-utils (and 'apt-get download stunnel4 nfs-common') on Ubuntu 24.04, and set efs_utils_release='24.04'"),
        ('NAME="Ubuntu"\n', "cannot read VERSION_ID from /etc/os-release"),
        (None, "cannot read VERSION_ID from /etc/os-release"),
    ],
)  # fmt: skip
def test_packages_for_another_ubuntu_release_fail_the_node_by_name(
    sandbox: Sandbox, tmp_path: Path, os_release: str | None, message: str
) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, CHECKPOINTS)
    (where / "amazon-efs-utils.deb").write_bytes(b"deb")
    if os_release is None:
        sandbox.file("/etc/os-release").unlink()
    else:
        sandbox.write("/etc/os-release", os_release)
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode != 0
    assert message in result.stderr
    assert sandbox.calls("apt-get") == [] and sandbox.calls("mount -t efs") == []


def test_a_release_given_with_single_quotes_matches(sandbox: Sandbox, tmp_path: Path) -> None:
    where = _lifecycle_dir(sandbox, tmp_path, {**CHECKPOINTS, "EFS_UTILS_UBUNTU": "24.04"})
    (where / "amazon-efs-utils.deb").write_bytes(b"deb")
    for dependency in ("stunnel4", "nfs-common"):
        sandbox.write(f"/installed-{dependency}", "")
    sandbox.write("/etc/os-release", "VERSION_ID='24.04'\n")
    sandbox.stub("mountpoint", "exit 1")
    result = sandbox.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode == 0, result.stderr
