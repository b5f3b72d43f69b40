"""A SageMaker HyperPod cluster as the job commands and ``scale`` see it: the cluster, its nodes, and
a shell on its Slurm controller.

**How commands reach the controller.** HyperPod nodes are SSM managed nodes with targets of the form
``sagemaker-cluster:<cluster-id>_<instance-group>-<instance-id>`` (the cluster id is the last part
of the cluster's ARN): "Accessing your SageMaker HyperPod cluster nodes", Amazon SageMaker AI Developer
Guide, https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-run-jobs-slurm-access-nodes.html
(read 2026-12-02). Only Session Manager takes such a target:

- ``ssm:SendCommand`` (Run Command) cannot: its ``InstanceIds`` and ``GetCommandInvocation``'s
  ``InstanceId`` follow the pattern ``(^i-(\\w{8}|\\w{17})$)|(^mi-\\w{17}$)`` (SSM API model,
  botocore 1.44 ``ssm/2014-11-06/service-2.json``), and AWS's own HyperPod agent skill says
  "``aws ssm send-command`` does NOT support ``sagemaker-cluster:`` targets — only ``start-session``
  works" (awslabs/agent-plugins ``plugins/sagemaker-ai/skills/hyperpod-ssm/SKILL.md``,
  https://github.com/awslabs/agent-plugins, read 2026-12-02).
- So each command is one non-interactive session: ``ssm:StartSession`` with the document
  ``AWS-StartNonInteractiveCommand`` and one ``command`` parameter, whose output the Session Manager
  plugin streams back, exactly as ``aws ssm start-session`` does it (aws-cli
  ``awscli/customizations/sessionmanager.py``: the plugin is run with the StartSession response, the
  Region, ``StartSession``, the profile, the request parameters and the endpoint). The plugin must be
  installed: "Install the Session Manager plugin for the AWS CLI", AWS Systems Manager User Guide,
  https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-working-with-install-plugin.html.
- The agent runs the command with ``sh -c`` on a pseudo-terminal (amazon-ssm-agent,
  ``agent/session/shell/shell_unix.go``), as ``root`` on HyperPod ("Default SSM non-interactive user
  is ``root``", the hyperpod-ssm skill above; plain Session Manager sessions start as ``ssm-user``)
  unless Session Manager's Run As names another user. The command is ``bash -c "$(printf %s <base64> | base64 -d)" jobs <action> <words>``:
  the program (``node_programs/files/hyperpod/jobs.sh``) and every argument are base64 or plain
  words, so nothing is re-parsed on the way; the output comes back with ``\\r\\n`` line ends (the
  terminal's), which are read as ``\\n``.

The controller is the node of the instance group whose ``SlurmConfig.NodeType`` is ``Controller``
(``sagemaker:DescribeCluster``), found with ``sagemaker:ListClusterNodes``.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
from dataclasses import dataclass, field
from typing import Any

from cdk_neuron import timeouts
from cdk_neuron.cli.aws import AwsLookupError, error_code, error_summary
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.stack_lookup import stack_outputs, stack_resource_arn
from cdk_neuron.deployment import Deployment, HyperPodLocation
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import FILES_DIR

SESSION_DOCUMENT = "AWS-StartNonInteractiveCommand"
PLUGIN = "session-manager-plugin"
PLUGIN_INSTALL = "https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-working-with-install-plugin.html"
# Plugins newer than this read the StartSession response from the environment variable named on their
# command line, instead of the response itself (which would show the session token in `ps`).
PLUGIN_LAST_WITHOUT_ENV = (1, 2, 497, 0)
PLUGIN_RESPONSE_ENV = "AWS_SSM_START_SESSION_RESPONSE"
JOBS_PROGRAM = FILES_DIR / "hyperpod" / "jobs.sh"
PARAMETER_LIMIT = 65535
"""StartSession's ``Parameters`` values are at most 65,535 characters (SSM API model,
``SessionManagerParameterValue``)."""
_WORD = re.compile(r"^[A-Za-z0-9+/=_.,-]+$")
_ARN = re.compile(r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:cluster/(?P<id>[a-z0-9]{12})$")
_CLUSTER_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


@dataclass(frozen=True)
class Node:
    """One HyperPod node (``ClusterNodeSummary``)."""

    group: str
    instance_id: str
    status: str | None
    hostname: str | None
    """``PrivateDnsHostname``: ``ip-10-1-0-16.<region>.compute.internal``; Slurm names the node by its
    first label."""

    @property
    def slurm_name(self) -> str | None:
        return self.hostname.split(".")[0] if self.hostname else None


@dataclass(frozen=True)
class Cluster:
    """A HyperPod cluster as ``sagemaker:DescribeCluster`` describes it."""

    name: str
    arn: str
    region: str
    status: str | None
    groups: tuple[dict[str, Any], ...] = field(repr=False)

    @property
    def cluster_id(self) -> str:
        match = _ARN.match(self.arn)
        if match is None:
            raise AwsLookupError(f"cluster ARN {self.arn} does not end in cluster/<12-character id>")
        return match["id"]

    def target(self, node: Node) -> str:
        """The node's Session Manager target."""
        return f"sagemaker-cluster:{self.cluster_id}_{node.group}-{node.instance_id}"

    def groups_of(self, node_type: str) -> list[dict[str, Any]]:
        return [g for g in self.groups if (g.get("SlurmConfig") or {}).get("NodeType") == node_type]

    def group(self, name: str) -> dict[str, Any]:
        for group in self.groups:
            if group.get("InstanceGroupName") == name:
                return group
        names = ", ".join(str(g.get("InstanceGroupName")) for g in self.groups) or "none"
        raise NeuronConfigError("--group", name, f"cluster {self.name} has instance groups {names}")

    def controller_group(self) -> str:
        """The controller's instance group: ``SlurmConfig.NodeType: Controller``, else one named
        ``controller`` (clusters configured with a provisioning_parameters.json carry no SlurmConfig)."""
        found = self.groups_of("Controller")
        if len(found) == 1:
            return str(found[0]["InstanceGroupName"])
        named = [g for g in self.groups if g.get("InstanceGroupName") == "controller"]
        if not found and len(named) == 1:
            return "controller"
        raise AwsLookupError(
            f"cannot tell which instance group of cluster {self.name} runs the Slurm controller "
            "(no single group has SlurmConfig.NodeType Controller, and none is named controller)"
        )

    def worker_group(self, name: str | None = None) -> dict[str, Any]:
        """``name``, else the only ``Compute`` group (a cdk-neuron cluster has one, ``trn``)."""
        if name is not None:
            return self.group(name)
        compute = self.groups_of("Compute")
        if len(compute) == 1:
            return compute[0]
        if not compute:
            raise AwsLookupError(
                f"cluster {self.name} has no worker group (no instance group with SlurmConfig.NodeType Compute): "
                "name one with --group"
            )
        names = ", ".join(str(g.get("InstanceGroupName")) for g in compute or self.groups)
        raise NeuronConfigError(
            "--group", None, f"cluster {self.name} has several worker groups ({names}): name one with --group"
        )

    def partition(self) -> str | None:
        """The only Slurm partition of the worker groups (``SlurmConfig.PartitionNames``), else None."""
        names = {
            p
            for g in self.groups_of("Compute")
            for p in (g.get("SlurmConfig") or {}).get("PartitionNames", [])
        }
        return names.pop() if len(names) == 1 else None


# --------------------------------------------------------------------------------------------
# Finding the cluster
# --------------------------------------------------------------------------------------------


def cluster_option(parser: Any) -> None:
    """``--cluster NAME_OR_ARN``, for the HyperPod engine."""
    parser.add_argument(
        "--cluster",
        metavar="NAME_OR_ARN",
        help="HyperPod engine: the cluster (default: the training stack's HyperPodClusterName output)",
    )


def cluster_name(ctx: Context, env: Deployment, given: str | None) -> str:
    """``--cluster``, else the app's name for it, else its training stack's output."""
    if given is not None:
        if not (_CLUSTER_NAME.match(given) or _ARN.match(given)):
            raise NeuronConfigError(
                "--cluster", given, "give the cluster's name (letters, digits, hyphens) or its ARN"
            )
        return given
    training = env.training
    location = (training.hyperpod if training is not None else None) or HyperPodLocation()
    if location.cluster_name is not None:
        return location.cluster_name
    if location.stack_name is None:
        raise NeuronConfigError(
            "--cluster",
            None,
            f"the app does not say where {env.name}'s HyperPod cluster is: pass --cluster NAME",
        )
    cloudformation = ctx.aws("cloudformation", env.region)
    if location.cluster_logical_id is not None:
        # The physical id of an AWS::SageMaker::Cluster is its ARN, which DescribeCluster takes.
        return stack_resource_arn(cloudformation, location.stack_name, location.cluster_logical_id)
    outputs = stack_outputs(cloudformation, location.stack_name)
    if location.cluster_name_output not in outputs:
        raise AwsLookupError(
            f"stack {location.stack_name} has no output {location.cluster_name_output} "
            f"(outputs: {', '.join(sorted(outputs)) or 'none'}): pass --cluster NAME"
        )
    return outputs[location.cluster_name_output]


def describe(ctx: Context, region: str, name: str) -> Cluster:
    sagemaker = ctx.aws("sagemaker", region)
    try:
        found = sagemaker.describe_cluster(ClusterName=name)
    except Exception as error:
        if error_code(error) in ("ResourceNotFound", "ValidationException"):
            raise AwsLookupError(
                f"no HyperPod cluster {name} in {region} ({error_summary(error)}): deploy the training stack, "
                "or pass --cluster NAME"
            ) from None
        raise
    return Cluster(
        name=str(found["ClusterName"]),
        arn=str(found["ClusterArn"]),
        region=region,
        status=found.get("ClusterStatus"),
        groups=tuple(found.get("InstanceGroups") or ()),
    )


def find(ctx: Context, env: Deployment, given: str | None) -> Cluster:
    return describe(ctx, env.region, cluster_name(ctx, env, given))


def nodes(ctx: Context, cluster: Cluster, group: str | None = None) -> list[Node]:
    """Every node of the cluster (of ``group`` when given), through every page."""
    sagemaker = ctx.aws("sagemaker", cluster.region)
    kwargs: dict[str, Any] = {"ClusterName": cluster.name, "MaxResults": 100}
    if group is not None:
        kwargs["InstanceGroupNameContains"] = group
    found: list[Node] = []
    while True:
        page = sagemaker.list_cluster_nodes(**kwargs)
        for summary in page.get("ClusterNodeSummaries", []):
            if group is not None and summary.get("InstanceGroupName") != group:
                continue  # the filter is "contains": "trn" also matches "trn-spare"
            found.append(
                Node(
                    group=str(summary["InstanceGroupName"]),
                    instance_id=str(summary["InstanceId"]),
                    status=(summary.get("InstanceStatus") or {}).get("Status"),
                    hostname=summary.get("PrivateDnsHostname"),
                )
            )
        if not page.get("NextToken"):
            return found
        kwargs["NextToken"] = page["NextToken"]


def controller(ctx: Context, cluster: Cluster) -> Node:
    """The Slurm controller node, which must be Running."""
    group = cluster.controller_group()
    found = nodes(ctx, cluster, group)
    running = [n for n in found if n.status == "Running"]
    if not running:
        states = ", ".join(f"{n.instance_id} {n.status}" for n in found) or "no node"
        raise AwsLookupError(
            f"the controller group {group} of cluster {cluster.name} has no Running node ({states}); "
            f"cluster status {cluster.status}: wait for it, or see aws sagemaker list-cluster-nodes "
            f"--cluster-name {cluster.name} --region {cluster.region}"
        )
    return running[0]


def node_for_host(ctx: Context, cluster: Cluster, host: str) -> Node | None:
    """The node Slurm calls ``host`` (its hostname's first label)."""
    return next((n for n in nodes(ctx, cluster) if n.slurm_name == host), None)


# --------------------------------------------------------------------------------------------
# Running jobs.sh on a node
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Remote:
    """What one run of jobs.sh printed: its records, the bytes after ``cdk-neuron:data``, its status."""

    records: list[list[str]]
    data: str | None
    exit_code: int
    output: str
    """Everything the session printed, for error messages."""

    def first(self, kind: str) -> list[str] | None:
        return next((r[1:] for r in self.records if r[0] == kind), None)

    def all(self, kind: str) -> list[list[str]]:
        return [r[1:] for r in self.records if r[0] == kind]


def remote_command(action: str, *args: str) -> str:
    """The ``command`` parameter of the session: jobs.sh, base64-encoded, with plain-word arguments."""
    for arg in (action, *args):
        if not _WORD.match(arg):
            raise ValueError(f"not a plain word for the remote command: {arg!r}")
    program = base64.b64encode(JOBS_PROGRAM.read_bytes()).decode("ascii")
    command = (
        f"CDK_NEURON_SLURM_TIMEOUT={timeouts.HYPERPOD_SLURM_COMMAND_TIMEOUT} "
        f'bash -c "$(printf %s {program} | base64 -d)" jobs {" ".join((action, *args))}'
    )
    if len(command) > PARAMETER_LIMIT:
        raise NeuronConfigError(
            "COMMAND",
            f"{len(command)} characters",
            f"the remote command exceeds Session Manager's {PARAMETER_LIMIT}-character parameter limit: "
            "shorten the training command (put long ones in a script on the cluster's storage)",
        )
    return command


def parse(output: str) -> Remote:
    """jobs.sh's records (``cdk-neuron:<kind>|...``), its data and its exit status."""
    text = output.replace("\r\n", "\n")
    begin = text.find("cdk-neuron:begin\n")
    ends = list(re.finditer(r"\ncdk-neuron:end\|(\d+)\n?", text))
    if begin < 0 or not ends:
        raise AwsLookupError(
            "the session on the controller did not run cdk-neuron's job program to the end; it printed:\n"
            + _tail(text)
        )
    end = ends[-1]
    body = text[begin + len("cdk-neuron:begin\n") : end.start() + 1]
    head, sep, data = body.partition("cdk-neuron:data\n")
    records = [
        line[len("cdk-neuron:") :].split("|") for line in head.splitlines() if line.startswith("cdk-neuron:")
    ]
    return Remote(records=records, data=data[:-1] if sep else None, exit_code=int(end[1]), output=text)


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:]) or "(nothing)"


def _plugin_version(ctx: Context) -> tuple[int, ...]:
    try:
        found = ctx.run([PLUGIN, "--version"], capture_output=True, text=True, check=False, timeout=30)
    except FileNotFoundError:
        raise AwsLookupError(
            f"the HyperPod job commands need the Session Manager plugin ({PLUGIN}), which is not on PATH: "
            f"install it ({PLUGIN_INSTALL}) and retry"
        ) from None
    version = str(found.stdout).strip()
    if found.returncode != 0 or not re.fullmatch(r"\d+(\.\d+){0,3}", version):
        raise AwsLookupError(
            f"{PLUGIN} --version answered {version or found.stderr!r}: reinstall it ({PLUGIN_INSTALL})"
        )
    return tuple(int(part) for part in version.split("."))


def run(ctx: Context, cluster: Cluster, node: Node, action: str, *args: str) -> Remote:
    """Run jobs.sh ``action`` on ``node`` in a non-interactive session, and parse what it printed.

    An SSM refusal (no agent online, no permission for the target or the document) is one message
    naming the target and the fix; so is a missing plugin.
    """
    command = remote_command(action, *args)
    version = _plugin_version(ctx)
    target = cluster.target(node)
    ssm = ctx.aws("ssm", cluster.region)
    parameters = {"command": [command]}
    request = {
        "Target": target,
        "DocumentName": SESSION_DOCUMENT,
        "Parameters": parameters,
        # Shown with the session in Session Manager's history and its EventBridge event: who ran what.
        "Reason": f"cdk-neuron {action}",
    }
    try:
        response = ssm.start_session(**request)
    except Exception as error:
        code = error_code(error)
        if not code:
            raise
        raise AwsLookupError(
            f"Session Manager refused a session on {target} ({error_summary(error)}): the node's SSM agent must "
            "be online and your identity needs ssm:StartSession on the cluster and on the document "
            f"{SESSION_DOCUMENT} (docs/cli.md, 'HyperPod: the job commands and their IAM')"
        ) from None
    session = json.dumps({k: response[k] for k in ("SessionId", "TokenValue", "StreamUrl")})
    env: dict[str, str] | None = None
    if version > PLUGIN_LAST_WITHOUT_ENV:
        import os

        env = {**os.environ, PLUGIN_RESPONSE_ENV: session}
        session = PLUGIN_RESPONSE_ENV
    argv = [
        PLUGIN,
        session,
        cluster.region,
        "StartSession",
        ctx.profile or "",
        json.dumps(request),
        str(ssm.meta.endpoint_url),
    ]
    try:
        # No terminal for the plugin: a non-interactive session reads nothing, and a plugin holding the
        # user's terminal could leave it in raw mode if the session ends abruptly.
        done = ctx.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",  # a job's log may hold any bytes; they print as U+FFFD, never a traceback
            check=False,
            timeout=timeouts.HYPERPOD_SESSION_TIMEOUT,
            env=env,
        )
    except subprocess.TimeoutExpired:
        ssm.terminate_session(SessionId=response["SessionId"])
        raise AwsLookupError(
            f"the session on {target} ran longer than {timeouts.HYPERPOD_SESSION_TIMEOUT} s and was ended "
            f"(session {response['SessionId']}): is the controller overloaded?"
        ) from None
    output = f"{done.stdout or ''}{done.stderr or ''}"
    if done.returncode != 0:
        raise AwsLookupError(
            f"{PLUGIN} exited {done.returncode} for the session on {target}:\n{_tail(output)}"
        )
    return parse(str(done.stdout or ""))


def require_ok(remote: Remote, what: str) -> Remote:
    """``remote`` when jobs.sh exited 0, else the error it recorded and what it printed."""
    if remote.exit_code == 0:
        return remote
    error = remote.first("error")
    detail = "|".join(error) if error else f"exit status {remote.exit_code}"
    printed = [
        line
        for line in remote.output.splitlines()
        if line and not line.startswith(("cdk-neuron:", "Starting session with", "Exiting session with"))
    ]
    more = ("; it printed:\n" + "\n".join(printed[-20:])) if printed else ""
    raise AwsLookupError(f"{what} failed on the controller: {detail}{more}")


__all__ = [
    "JOBS_PROGRAM",
    "PLUGIN",
    "SESSION_DOCUMENT",
    "Cluster",
    "Node",
    "Remote",
    "cluster_name",
    "cluster_option",
    "controller",
    "describe",
    "find",
    "node_for_host",
    "nodes",
    "parse",
    "remote_command",
    "require_ok",
    "run",
]
