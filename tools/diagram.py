"""Draw how one environment's pieces connect, from its synthesized cloud assembly, as an SVG.

The picture is read from the templates `cdk deploy` ships, so it cannot drift from them: the AZs
(by AZ ID, from the subnets), the training nodes in their cluster placement group and the AZ they
may launch in, the checkpoint file system and its mount targets, the serving instances behind the
load balancer, the S3 gateway endpoint the data goes through, the NAT, and where alarms go. Three
paths are drawn: requests (client -> load balancer -> instances), data (checkpoints, the compile
cache, model artifacts) and EFA between training nodes. `make diagram` refreshes
docs/architecture.svg.

Usage: python -m tools.diagram [--env dev] [--assembly cdk.out] [--out docs/architecture.svg]
Without an existing assembly for the environment it synthesizes the app in-process.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from cdk_neuron import catalog

Template = dict[str, Any]


# -- what the templates say ----------------------------------------------------------------------


@dataclass(frozen=True)
class Stacks:
    """One environment's templates, by CloudFormation stack name, and its Region."""

    env: str
    region: str
    templates: dict[str, Template]

    def resources(self, kind: str) -> list[tuple[str, str, dict[str, Any]]]:
        """(stack name, logical id, properties) of every resource of one CloudFormation type."""
        return [
            (stack, logical_id, resource.get("Properties", {}))
            for stack, template in self.templates.items()
            for logical_id, resource in template.get("Resources", {}).items()
            if resource["Type"] == kind
        ]

    def in_stack(self, stack: str, kind: str) -> list[dict[str, Any]]:
        """The properties of one stack's resources of one type."""
        return [props for owner, _, props in self.resources(kind) if owner == stack]

    def target(self, stack: str, value: Any) -> tuple[str, str] | None:
        """The (stack, logical id) a ``Ref``, or a cross-stack ``Fn::GetStackOutput`` of one, names."""
        if isinstance(value, dict) and "Ref" in value:
            return stack, value["Ref"]
        reference = value.get("Fn::GetStackOutput") if isinstance(value, dict) else None
        if reference is None:
            return None
        producer = reference["StackName"]
        output = self.templates[producer].get("Outputs", {}).get(reference["OutputName"], {})
        return self.target(producer, output.get("Value"))

    def properties(self, stack: str, logical_id: str) -> dict[str, Any]:
        props: dict[str, Any] = self.templates[stack]["Resources"][logical_id].get("Properties", {})
        return props

    def zones_of(self, stack: str, subnets: list[Any]) -> list[str]:
        """The AZ IDs of subnet references, in the order given, each once."""
        zones: list[str] = []
        for subnet in subnets:
            found = self.target(stack, subnet)
            zone = self.properties(*found).get("AvailabilityZoneId") if found else None
            if isinstance(zone, str) and zone not in zones:
                zones.append(zone)
        return zones


def load_stacks(assembly: Path, env: str) -> Stacks:
    """The templates of one environment's stacks in a cloud assembly (nested or flat)."""
    nested = assembly / f"assembly-{env}"
    directory = nested if nested.is_dir() else assembly
    manifest = json.loads((directory / "manifest.json").read_text())
    templates: dict[str, Template] = {}
    region = ""
    for artifact in manifest.get("artifacts", {}).values():
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        properties = artifact["properties"]
        templates[properties.get("stackName", artifact.get("displayName", ""))] = json.loads(
            (directory / properties["templateFile"]).read_text()
        )
        region = artifact.get("environment", "").rsplit("/", 1)[-1]
    return Stacks(env, region, templates)


@dataclass(frozen=True)
class Training:
    engine: str  # "Batch" or "Auto Scaling"
    instance_type: str
    max_nodes: int
    efa_per_node: int
    zones: list[str]
    placement_group: bool


@dataclass(frozen=True)
class Serving:
    kind: str  # "ec2" or "sagemaker"
    instance_type: str
    min_capacity: int
    max_capacity: int
    zones: list[str]
    front: str  # what requests enter: "internal ALB, HTTP :80" or "SageMaker endpoint"
    target_port: int | None
    clients: str | None  # who may send requests (the load balancer's ingress)
    isolated: bool = False  # a SageMaker model without network access


@dataclass(frozen=True)
class Topology:
    env: str
    region: str
    vpc_cidr: str
    zones: list[str]  # AZ IDs of the private subnets, in order: the first is the training AZ
    nat: dict[str, str]  # AZ ID -> "NAT gateway" or "NAT instance t4g.nano"
    interface_endpoints: int
    s3_gateway: bool
    training: Training | None
    checkpoint_zones: list[str]  # AZs with an EFS mount target
    one_zone: bool
    backup: bool
    compile_cache: bool
    serving: Serving | None
    model_source: str | None
    alarms: int
    dashboard: bool
    topic: bool
    event_rules: int


def _private_zones(stacks: Stacks) -> list[str]:
    zones: list[str] = []
    for _, _, props in stacks.resources("AWS::EC2::Subnet"):
        tags = {tag["Key"]: tag["Value"] for tag in props.get("Tags", [])}
        zone = props.get("AvailabilityZoneId")
        if (
            tags.get("aws-cdk:subnet-type") in ("Private", "Isolated")
            and isinstance(zone, str)
            and zone not in zones
        ):
            zones.append(zone)
    return zones


def _nat(stacks: Stacks) -> dict[str, str]:
    nat: dict[str, str] = {}
    for stack, _, props in stacks.resources("AWS::EC2::NatGateway"):
        for zone in stacks.zones_of(stack, [props["SubnetId"]]):
            nat[zone] = "NAT gateway"
    for stack, _, props in stacks.resources("AWS::EC2::Instance"):
        subnets = [
            props.get("SubnetId"),
            *(nic.get("SubnetId") for nic in props.get("NetworkInterfaces", [])),
        ]
        if props.get("SourceDestCheck") is False:
            for zone in stacks.zones_of(stack, [subnet for subnet in subnets if subnet]):
                nat[zone] = f"NAT instance {props.get('InstanceType', '')}".strip()
    return nat


def _efa_per_node(stacks: Stacks, stack: str) -> int:
    return max((_efa_count(props) for props in stacks.in_stack(stack, "AWS::EC2::LaunchTemplate")), default=0)


def _efa_count(launch_template: dict[str, Any]) -> int:
    nics = launch_template.get("LaunchTemplateData", {}).get("NetworkInterfaces", [])
    return sum(1 for nic in nics if nic.get("InterfaceType") == "efa")


def _training(stacks: Stacks) -> Training | None:
    for stack, _, props in stacks.resources("AWS::Batch::ComputeEnvironment"):
        resources = props.get("ComputeResources", {})
        (instance_type,) = resources["InstanceTypes"]
        vcpus = catalog.get_instance(instance_type).vcpus
        return Training(
            "Batch",
            instance_type,
            int(resources["MaxvCpus"]) // vcpus,
            _efa_per_node(stacks, stack),
            stacks.zones_of(stack, resources.get("Subnets", [])),
            "PlacementGroup" in resources,
        )
    for stack, _, props in stacks.resources("AWS::AutoScaling::AutoScalingGroup"):
        launch = stacks.target(stack, props.get("LaunchTemplate", {}).get("LaunchTemplateId"))
        template = stacks.properties(*launch) if launch else {}
        if not _efa_count(template):
            continue  # a serving fleet, not a training node group
        data = template["LaunchTemplateData"]
        return Training(
            "Auto Scaling",
            data.get("InstanceType", "?"),
            int(props["MaxSize"]),
            _efa_per_node(stacks, stack),
            stacks.zones_of(stack, props.get("VPCZoneIdentifier", [])),
            "PlacementGroup" in props or "Placement" in data,
        )
    return None


def _ec2_serving(stacks: Stacks) -> tuple[Serving | None, str | None]:
    for stack, _, lb in stacks.resources("AWS::ElasticLoadBalancingV2::LoadBalancer"):
        listeners = stacks.in_stack(stack, "AWS::ElasticLoadBalancingV2::Listener")
        groups = stacks.in_stack(stack, "AWS::ElasticLoadBalancingV2::TargetGroup")
        fleets = stacks.in_stack(stack, "AWS::AutoScaling::AutoScalingGroup")
        if not (listeners and groups and fleets):
            continue
        fleet = fleets[0]
        launch = stacks.target(stack, fleet["LaunchTemplate"]["LaunchTemplateId"])
        instance_type = (
            stacks.properties(*launch)["LaunchTemplateData"].get("InstanceType", "?") if launch else "?"
        )
        clients = [
            rule["CidrIp"]
            for owner, _, sg in stacks.resources("AWS::EC2::SecurityGroup")
            if owner == stack
            for rule in sg.get("SecurityGroupIngress", [])
            if "CidrIp" in rule and rule.get("FromPort") == listeners[0]["Port"]
        ]
        scheme = lb.get("Scheme", "internet-facing")
        return Serving(
            "ec2",
            instance_type,
            int(fleet["MinSize"]),
            int(fleet["MaxSize"]),
            stacks.zones_of(stack, fleet.get("VPCZoneIdentifier", [])),
            f"{scheme} ALB, {listeners[0]['Protocol']} :{listeners[0]['Port']}",
            int(groups[0]["Port"]),
            clients[0] if clients else None,
        ), stack
    return None, None


def _sagemaker_serving(stacks: Stacks) -> tuple[Serving | None, str | None]:
    for stack, _, config in stacks.resources("AWS::SageMaker::EndpointConfig"):
        variant = config["ProductionVariants"][0]
        models = stacks.in_stack(stack, "AWS::SageMaker::Model")
        subnets = models[0].get("VpcConfig", {}).get("Subnets", []) if models else []
        scaling = stacks.in_stack(stack, "AWS::ApplicationAutoScaling::ScalableTarget")
        low = int(scaling[0]["MinCapacity"]) if scaling else int(variant.get("InitialInstanceCount", 1))
        high = int(scaling[0]["MaxCapacity"]) if scaling else low
        return Serving(
            "sagemaker",
            variant["InstanceType"],
            low,
            high,
            stacks.zones_of(stack, subnets),
            "SageMaker endpoint (InvokeEndpoint)",
            None,
            None,
            isolated=bool(models and models[0].get("EnableNetworkIsolation")),
        ), stack
    return None, None


def _model_source(stacks: Stacks, stack: str | None) -> str | None:
    """The model artifacts' S3 location the serving role may read (not CDK's asset bucket)."""
    if stack is None:
        return None
    text = json.dumps(stacks.templates[stack])
    found = sorted(set(re.findall(r"arn:aws:s3:::((?!cdk-[a-z0-9]+-assets-)[a-z0-9.-]+/[^\"*]*)\*", text)))
    return f"s3://{found[0]}" if found else None


def topology(stacks: Stacks) -> Topology:
    """What the picture shows, read from the templates."""
    training = _training(stacks)
    serving, serving_stack = _ec2_serving(stacks)
    if serving is None:
        serving, serving_stack = _sagemaker_serving(stacks)
    file_systems = stacks.resources("AWS::EFS::FileSystem")
    mount_zones: list[str] = []
    for stack, _, props in stacks.resources("AWS::EFS::MountTarget"):
        mount_zones += [z for z in stacks.zones_of(stack, [props["SubnetId"]]) if z not in mount_zones]
    (vpc,) = [props for _, _, props in stacks.resources("AWS::EC2::VPC")]
    endpoints = [props for _, _, props in stacks.resources("AWS::EC2::VPCEndpoint")]
    return Topology(
        env=stacks.env,
        region=stacks.region,
        vpc_cidr=str(vpc.get("CidrBlock", "")),
        zones=_private_zones(stacks),
        nat=_nat(stacks),
        interface_endpoints=sum(1 for e in endpoints if e.get("VpcEndpointType", "Interface") == "Interface"),
        s3_gateway=any(e.get("VpcEndpointType") == "Gateway" for e in endpoints),
        training=training,
        checkpoint_zones=mount_zones,
        one_zone=any("AvailabilityZoneName" in props for _, _, props in file_systems),
        backup=bool(stacks.resources("AWS::Backup::BackupPlan")),
        compile_cache=any(
            "CompileCache" in logical_id for _, logical_id, _ in stacks.resources("AWS::S3::Bucket")
        ),
        serving=serving,
        model_source=_model_source(stacks, serving_stack),
        alarms=len(stacks.resources("AWS::CloudWatch::Alarm")),
        dashboard=bool(stacks.resources("AWS::CloudWatch::Dashboard")),
        topic=bool(stacks.resources("AWS::SNS::Topic")),
        event_rules=len(stacks.resources("AWS::Events::Rule")),
    )


# -- the picture ------------------------------------------------------------------------------------

# Fill and stroke of a box, by the stack that deploys it (the legend names them).
STACK_COLOURS = {
    "network": ("#eef3f8", "#2f5d8a"),
    "training": ("#fdf1e3", "#b86e00"),
    "serving": ("#e8f5ea", "#2e7d32"),
    "monitoring": ("#f3ecf8", "#6a3d9a"),
}
PATHS = {  # path -> (colour, dash pattern, what the legend calls it)
    "request": ("#1565c0", "", "request path"),
    "data": ("#2e7d32", "", "data path (through the S3 gateway endpoint, NFS)"),
    "efa": ("#e65100", "6 3", "EFA between training nodes (SRD, one AZ)"),
    "signal": ("#777777", "3 3", "metrics and events to alarms"),
}
COLUMN = 330  # width of one AZ column
LEFT = 190  # room for the clients, left of the VPC
TOP = 70
ROWS = {  # y (below TOP) and height of each row of an AZ column
    "nat": (52, 34),
    "training": (100, 96),
    "checkpoints": (222, 46),
    "front": (300, 30),
    "serving": (350, 66),
}
SERVICES = 320  # width of the AWS-services column right of the VPC
TRAINING_WIDTH = 200


class _Canvas:
    """SVG elements, appended in drawing order."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def box(self, x: float, y: float, w: float, h: float, lines: list[str], stack: str) -> None:
        fill, stroke = STACK_COLOURS[stack]
        self.parts.append(
            f'<rect x="{x:.0f}" y="{y:.0f}" width="{w:.0f}" height="{h:.0f}" rx="8" '
            f'fill="{fill}" stroke="{stroke}"/>'
        )
        for number, line in enumerate(lines):
            self.text(x + 10, y + 18 + 16 * number, line, ' font-weight="bold"' if number == 0 else "")

    def frame(self, x: float, y: float, w: float, h: float, label: str, *, dashed: bool = False) -> None:
        dash = ' stroke-dasharray="8 4"' if dashed else ""
        self.parts.append(
            f'<rect x="{x:.0f}" y="{y:.0f}" width="{w:.0f}" height="{h:.0f}" rx="12" fill="none" '
            f'stroke="#8a8a8a"{dash}/>'
        )
        self.text(x + 10, y + 16, label, ' fill="#555" font-style="italic"')

    def text(self, x: float, y: float, words: str, attributes: str = "") -> None:
        self.parts.append(f'<text x="{x:.0f}" y="{y:.0f}"{attributes}>{escape(words)}</text>')

    def label(self, x: float, y: float, words: str, path: str, *, anchor: str = "start") -> None:
        self.text(x, y, words, f' fill="{PATHS[path][0]}" font-size="11" text-anchor="{anchor}"')

    def arrow(self, points: list[tuple[float, float]], path: str) -> None:
        colour, dash, _ = PATHS[path]
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        coordinates = " ".join(f"{x:.0f},{y:.0f}" for x, y in points)
        self.parts.append(
            f'<polyline points="{coordinates}" fill="none" stroke="{colour}" stroke-width="2"{dashes} '
            f'marker-end="url(#{path})"/>'
        )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


@dataclass
class _Layout:
    """Where things are: one column per AZ inside the VPC, AWS services to its right."""

    top: Topology
    canvas: _Canvas = field(default_factory=_Canvas)
    boxes: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> top-left corner

    def __post_init__(self) -> None:
        self.zones = self.top.zones or ["?"]
        self.vpc_x, self.vpc_w = LEFT, COLUMN * len(self.zones) + 20
        self.edge = self.vpc_x + self.vpc_w  # the VPC's right edge, where the S3 gateway endpoint sits
        self.services_x = self.edge + 110
        self.width = self.services_x + SERVICES
        self.bottom = TOP + sum(ROWS["serving"]) + 60
        self.height = self.bottom + 120

    def x(self, zone: str) -> float:
        return self.vpc_x + 10 + COLUMN * self.zones.index(zone) if zone in self.zones else self.vpc_x + 10

    def y(self, row: str) -> float:
        return TOP + ROWS[row][0]


def _draw_network(layout: _Layout) -> None:
    top, canvas = layout.top, layout.canvas
    canvas.frame(
        layout.vpc_x - 10, TOP - 22, layout.vpc_w + 30, layout.bottom - TOP + 30, f"Region {top.region}"
    )
    endpoints = (
        f", {_plural(top.interface_endpoints, 'interface endpoint')}" if top.interface_endpoints else ""
    )
    canvas.frame(layout.vpc_x, TOP, layout.vpc_w, layout.bottom - TOP, f"VPC {top.vpc_cidr}{endpoints}")
    training_zones = top.training.zones if top.training else []
    for zone in layout.zones:
        role = " - training AZ" if zone in training_zones else ""
        canvas.frame(
            layout.x(zone), TOP + 24, COLUMN - 10, layout.bottom - TOP - 34, f"AZ {zone}{role}", dashed=True
        )
        if zone in top.nat:
            nat_y, nat_h = ROWS["nat"]
            canvas.box(
                layout.x(zone) + 10,
                TOP + nat_y,
                COLUMN - 30,
                nat_h,
                [f"{top.nat[zone]} (public subnet)"],
                "network",
            )
    if top.s3_gateway:
        layout.boxes["gateway"] = (layout.edge - 18, layout.y("training") + 10)
        canvas.box(*layout.boxes["gateway"], 120, 40, ["S3 gateway", "endpoint (free)"], "network")


def _draw_training(layout: _Layout) -> None:
    training, canvas = layout.top.training, layout.canvas
    if training is None:
        return
    x, (row_y, row_h) = layout.x(training.zones[0] if training.zones else ""), ROWS["training"]
    group = "cluster placement group" if training.placement_group else "no placement group"
    canvas.frame(x + 6, TOP + row_y - 6, COLUMN - 22, row_h + 12, group, dashed=True)
    y = TOP + row_y + 16
    lines = [
        f"{training.engine} training nodes",
        f"0-{training.max_nodes} x {training.instance_type}",
        f"{training.efa_per_node} EFA interfaces each",
    ]
    canvas.box(x + 14, y, TRAINING_WIDTH, row_h - 22, lines, "training")
    right = x + 14 + TRAINING_WIDTH
    canvas.arrow([(right, y + 34), (right + 40, y + 34), (right + 40, y + 54), (right + 2, y + 54)], "efa")
    canvas.label(right + 46, y + 48, "EFA", "efa")
    layout.boxes["training"] = (x + 14, y)


def _draw_checkpoints(layout: _Layout) -> None:
    top, canvas = layout.top, layout.canvas
    what = "EFS One Zone" if top.one_zone else "EFS mount target"
    for zone in top.checkpoint_zones:
        layout.boxes[f"checkpoints {zone}"] = (layout.x(zone) + 10, layout.y("checkpoints"))
        canvas.box(
            *layout.boxes[f"checkpoints {zone}"], COLUMN - 30, ROWS["checkpoints"][1],
            [f"{what}: checkpoints", "TLS and IAM only"], "training",
        )  # fmt: skip
    training_zone = top.training.zones[0] if top.training and top.training.zones else None
    if "training" in layout.boxes and f"checkpoints {training_zone}" in layout.boxes:
        tx, ty = layout.boxes["training"]
        ey = layout.boxes[f"checkpoints {training_zone}"][1]
        canvas.arrow([(tx + 80, ty + ROWS["training"][1] - 22), (tx + 80, ey)], "data")
        canvas.label(tx + 86, ey - 8, "NFS, /checkpoints", "data")


def _draw_serving(layout: _Layout) -> None:
    serving, canvas = layout.top.serving, layout.canvas
    if serving is None:
        return
    zones = [zone for zone in layout.zones if zone in serving.zones] or layout.zones
    fx, fy = layout.x(zones[0]) + 10, layout.y("front")
    canvas.box(fx, fy, layout.x(zones[-1]) + COLUMN - 20 - fx, ROWS["front"][1], [f"{serving.front}, in {_plural(len(zones), 'AZ')}"], "serving")  # fmt: skip
    spread = f"{serving.min_capacity}-{serving.max_capacity}" + (" across the AZs" if len(zones) > 1 else "")
    if serving.kind == "sagemaker":
        access = "network-isolated" if serving.isolated else "in the VPC's subnets"
        lines = [f"{serving.instance_type} instances", f"{spread} (SageMaker-managed)", access]
    else:
        lines = [f"{serving.instance_type} instances", f"{spread}, one replica per", "set of NeuronCores"]
    for zone in zones:
        x, y = layout.x(zone) + 10, layout.y("serving")
        canvas.box(x, y, COLUMN - 30, ROWS["serving"][1], lines, "serving")
        canvas.arrow([(x + 120, fy + ROWS["front"][1]), (x + 120, y)], "request")
        if serving.target_port:
            canvas.label(x + 128, y - 6, f"HTTP :{serving.target_port}", "request")
        layout.boxes["serving"] = (x, y)  # the last AZ's: data leaves the VPC from there
    canvas.box(20, fy - 10, LEFT - 60, 50, ["clients", serving.clients or "IAM-signed"], "network")
    canvas.arrow([(LEFT - 40, fy + 15), (fx, fy + 15)], "request")


def _draw_services(layout: _Layout) -> None:
    """S3, AWS Backup and the Monitoring stack, right of the VPC, and the paths into them."""
    top, canvas = layout.top, layout.canvas
    x, edge = layout.services_x, layout.edge
    services: list[tuple[str, float, list[str], str]] = []
    if top.compile_cache:
        services.append(("cache", layout.y("training") - 30, ["S3 compile cache (KMS)", "NEURON_COMPILE_CACHE_URL"], "training"))  # fmt: skip
    if top.model_source:
        bucket = top.model_source.removeprefix("s3://").split("/", 1)[0]
        services.append(("model", layout.y("training") + 50, ["S3 model artifacts", f"s3://{bucket}/..."], "serving"))  # fmt: skip
    if top.backup:
        services.append(
            ("backup", layout.y("checkpoints"), ["AWS Backup", "daily, retained vault"], "training")
        )
    alarms = [f"CloudWatch: {_plural(top.alarms, 'alarm')}" + (", dashboard" if top.dashboard else "")]
    if top.event_rules:
        alarms.append(f"{_plural(top.event_rules, 'EventBridge rule')} (job, backup)")
    if top.topic:
        alarms.append("-> SNS topic (KMS) -> your pager")
    services.append(("monitoring", layout.y("serving") - 10, ["Monitoring stack", *alarms], "monitoring"))
    for name, y, lines, stack in services:
        canvas.box(x, y, SERVICES - 30, 18 + 16 * len(lines), lines, stack)
        layout.boxes[name] = (x, y)
    gateway, boxes = layout.boxes.get("gateway"), layout.boxes
    if gateway and "training" in boxes and "cache" in boxes:
        tx, ty = boxes["training"]
        canvas.arrow([(tx + TRAINING_WIDTH, ty + 12), (gateway[0], ty + 12)], "data")
        canvas.label(tx + TRAINING_WIDTH + 70, ty + 6, "compiled graphs", "data")
        canvas.arrow([(gateway[0] + 120, gateway[1] + 12), (x, boxes["cache"][1] + 20)], "data")
    if "serving" in boxes and "model" in boxes and top.serving:
        sx, sy = boxes["serving"]
        if top.serving.kind == "ec2" and gateway:
            canvas.arrow(
                [(sx + COLUMN - 30, sy + 20), (edge + 40, sy + 20), (edge + 40, gateway[1] + 40)], "data"
            )
            canvas.label(edge + 46, sy - 20, "model weights", "data")
            canvas.arrow([(gateway[0] + 120, gateway[1] + 30), (x, boxes["model"][1] + 20)], "data")
        else:  # SageMaker copies the model in itself, outside the container
            model_y = boxes["model"][1] + 30
            canvas.arrow(
                [(sx + COLUMN - 30, sy + 20), (x - 20, sy + 20), (x - 20, model_y), (x, model_y)], "data"
            )
            canvas.label(
                x - 26, layout.y("front") - 10, "model weights, copied in by SageMaker", "data", anchor="end"
            )
    last_checkpoints = [name for name in boxes if name.startswith("checkpoints ")][-1:]
    if last_checkpoints and "backup" in boxes:
        cx, cy = boxes[last_checkpoints[0]]
        canvas.arrow([(cx + COLUMN - 30, cy + 30), (x, boxes["backup"][1] + 30)], "data")
        canvas.label(cx + COLUMN - 20, cy + 24, "daily backup", "data")
    canvas.arrow([(edge, layout.bottom - 20), (x, boxes["monitoring"][1] + 50)], "signal")
    sources = [
        "Neuron metrics" if top.training or (top.serving and top.serving.kind == "ec2") else "",
        {"ec2": "ALB", "sagemaker": "SageMaker"}[top.serving.kind] if top.serving else "",
        "EFS" if top.checkpoint_zones else "",
        "Batch events" if top.training and top.training.engine == "Batch" else "",
    ]
    canvas.label(edge + 8, layout.bottom, ", ".join(source for source in sources if source), "signal")


def _draw_legend(layout: _Layout) -> None:
    canvas, y = layout.canvas, layout.height - 80
    for index, (path, (_, _, words)) in enumerate(PATHS.items()):
        x, row = 20 + (index % 2) * 460, y + (index // 2) * 22
        canvas.arrow([(x, row), (x + 40, row)], path)
        canvas.text(x + 50, row + 4, words)
    canvas.text(
        20,
        layout.height - 22,
        "Generated from the synthesized templates by tools/diagram.py (make diagram). Boxes by stack: "
        "blue Network, orange Training, green Serving, purple Monitoring.",
        ' fill="#555"',
    )


def render_svg(top: Topology) -> str:
    """The environment as one picture: AZ columns inside the VPC, AWS services on the right."""
    layout = _Layout(top)
    markers = "".join(
        f'<marker id="{path}" markerWidth="10" markerHeight="8" refX="9" refY="4" orient="auto">'
        f'<path d="M0,0 L10,4 L0,8 z" fill="{colour}"/></marker>'
        for path, (colour, _, _) in PATHS.items()
    )
    layout.canvas.parts += [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{layout.width:.0f}" height="{layout.height:.0f}" '
        'font-family="Helvetica, Arial, sans-serif" font-size="13">',
        f"<defs>{markers}</defs>",
        '<rect width="100%" height="100%" fill="#ffffff"/>',
    ]
    title = f"cdk-neuron: how the {top.env} environment's pieces connect ({top.region})"
    layout.canvas.text(20, 30, title, ' font-size="18" font-weight="bold"')
    for draw in (
        _draw_network,
        _draw_training,
        _draw_checkpoints,
        _draw_serving,
        _draw_services,
        _draw_legend,
    ):
        draw(layout)
    layout.canvas.parts.append("</svg>")
    return "\n".join(layout.canvas.parts) + "\n"


def _synthesize(env: str, outdir: Path) -> Path:
    """Synthesize the app for one environment in-process (no AWS access)."""
    import aws_cdk as cdk

    from stacks.app_builder import build_app

    repo = Path(__file__).resolve().parent.parent
    context = json.loads((repo / "cdk.json").read_text())["context"]
    app = cdk.App(outdir=str(outdir), context={**context, "env": env})
    build_app(app)
    app.synth()
    return outdir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="dev")
    parser.add_argument(
        "--assembly", type=Path, default=None, help="existing cloud assembly (default: synthesize)"
    )
    parser.add_argument("--out", type=Path, default=Path("docs/architecture.svg"))
    args = parser.parse_args(argv)
    if args.assembly is None:
        import tempfile

        assembly = _synthesize(args.env, Path(tempfile.mkdtemp(prefix="cdk-neuron-diagram-")))
    else:
        assembly = args.assembly
    stacks = load_stacks(assembly, args.env)
    if not stacks.templates:
        print(f"no stacks for environment {args.env!r} in {assembly}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render_svg(topology(stacks)))
    print(f"wrote {args.out} ({len(stacks.templates)} stacks)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
