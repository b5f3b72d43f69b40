"""Draw what one environment deploys, from its synthesized cloud assembly, as an SVG.

The picture is generated from the code (the synthesized templates), so it cannot drift from
what `cdk deploy` ships. `make diagram` refreshes docs/architecture.svg.

Usage: python -m tools.diagram [--env dev] [--assembly cdk.out] [--out docs/architecture.svg]
Without an existing assembly for the environment it synthesizes the app in-process.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from html import escape
from pathlib import Path

# CloudFormation types worth showing, with the words a reader expects. Everything else is
# summarized as "+ N supporting resources" so the picture stays readable.
FRIENDLY: dict[str, str] = {
    "AWS::EC2::VPC": "VPC",
    "AWS::EC2::Subnet": "subnet (pinned by AZ ID)",
    "AWS::EC2::NatGateway": "NAT gateway",
    "AWS::EC2::VPCEndpoint": "VPC endpoint",
    "AWS::EC2::FlowLog": "VPC flow log",
    "AWS::EC2::LaunchTemplate": "launch template (IMDSv2)",
    "AWS::EC2::PlacementGroup": "cluster placement group",
    "AWS::EC2::SecurityGroup": "security group",
    "AWS::Batch::ComputeEnvironment": "Batch compute environment",
    "AWS::Batch::JobQueue": "Batch job queue",
    "AWS::Batch::JobDefinition": "Batch multi-node job definition",
    "AWS::AutoScaling::AutoScalingGroup": "Auto Scaling group",
    "AWS::AutoScaling::WarmPool": "warm pool",
    "AWS::EFS::FileSystem": "EFS checkpoint file system",
    "AWS::EFS::AccessPoint": "EFS access point",
    "AWS::EFS::MountTarget": "EFS mount target",
    "AWS::Backup::BackupPlan": "AWS Backup plan",
    "AWS::Backup::BackupVault": "backup vault",
    "AWS::S3::Bucket": "S3 bucket",
    "AWS::KMS::Key": "KMS key (rotating)",
    "AWS::ElasticLoadBalancingV2::LoadBalancer": "internal ALB",
    "AWS::ElasticLoadBalancingV2::TargetGroup": "target group",
    "AWS::SageMaker::Model": "SageMaker model",
    "AWS::SageMaker::EndpointConfig": "SageMaker endpoint config",
    "AWS::SageMaker::Endpoint": "SageMaker endpoint",
    "AWS::ApplicationAutoScaling::ScalableTarget": "endpoint autoscaling",
    "AWS::CloudWatch::Alarm": "CloudWatch alarm",
    "AWS::CloudWatch::Dashboard": "CloudWatch dashboard",
    "AWS::SNS::Topic": "SNS alarm topic",
    "AWS::Events::Rule": "EventBridge rule",
    "AWS::IAM::Role": "IAM role",
}

BOX_WIDTH = 300
LINE_HEIGHT = 18
PADDING = 14
GAP = 70


def _assembly_dir(assembly: Path, env: str) -> Path:
    nested = assembly / f"assembly-{env}"
    return nested if nested.is_dir() else assembly


def load_stacks(assembly: Path, env: str) -> list[tuple[str, dict[str, object], list[str]]]:
    """(display name, template, dependency display names) for each stack of one environment."""
    directory = _assembly_dir(assembly, env)
    manifest = json.loads((directory / "manifest.json").read_text())
    artifacts = manifest.get("artifacts", {})
    stacks: list[tuple[str, dict[str, object], list[str]]] = []
    names: dict[str, str] = {}
    for artifact_id, artifact in artifacts.items():
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        display = artifact.get("displayName", artifact_id).split("/")[-1]
        names[artifact_id] = display
    for artifact_id, display in names.items():
        artifact = artifacts[artifact_id]
        template = json.loads((directory / artifact["properties"]["templateFile"]).read_text())
        deps = [names[d] for d in artifact.get("dependencies", []) if d in names]
        stacks.append((display, template, deps))
    return stacks


def summarize(template: dict[str, object]) -> list[str]:
    resources = template.get("Resources", {})
    assert isinstance(resources, dict)
    counts = Counter(str(r.get("Type")) for r in resources.values())
    lines = [
        f"{n} x {FRIENDLY[t]}" if n > 1 else FRIENDLY[t]
        for t, n in sorted(
            counts.items(), key=lambda kv: list(FRIENDLY).index(kv[0]) if kv[0] in FRIENDLY else 0
        )
        if t in FRIENDLY
    ]
    rest = sum(n for t, n in counts.items() if t not in FRIENDLY)
    if rest:
        lines.append(f"+ {rest} supporting resources")
    return lines


def render_svg(env: str, stacks: list[tuple[str, dict[str, object], list[str]]]) -> str:
    boxes = [(name, summarize(template), deps) for name, template, deps in stacks]
    height = max((len(lines) + 2) * LINE_HEIGHT + 2 * PADDING for _, lines, _ in boxes) if boxes else 100
    width = len(boxes) * (BOX_WIDTH + GAP) + GAP
    top = 100  # room above the boxes for arrows that skip a box
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + top + 40}" '
        f'font-family="Helvetica, Arial, sans-serif" font-size="13">',
        '<defs><marker id="arrow" markerWidth="10" markerHeight="8" refX="9" refY="4" orient="auto">'
        '<path d="M0,0 L10,4 L0,8 z" fill="#555"/></marker></defs>',
        '<rect width="100%" height="100%" fill="#ffffff"/>',
        f'<text x="{GAP}" y="34" font-size="18" font-weight="bold">cdk-neuron: what the '
        f"{escape(env)} environment deploys</text>",
    ]
    x_of = {name: GAP + i * (BOX_WIDTH + GAP) for i, (name, _, _) in enumerate(boxes)}
    for name, lines, _ in boxes:
        x = x_of[name]
        parts.append(
            f'<rect x="{x}" y="{top}" width="{BOX_WIDTH}" height="{height}" rx="10" fill="#f3f7fb" stroke="#2f5d8a"/>'
        )
        parts.append(
            f'<text x="{x + PADDING}" y="{top + PADDING + 12}" font-weight="bold">{escape(name)}</text>'
        )
        for i, line in enumerate(lines):
            y = top + PADDING + 12 + (i + 1.5) * LINE_HEIGHT
            parts.append(f'<text x="{x + PADDING}" y="{y:.0f}">{escape(line)}</text>')
    order = [name for name, _, _ in boxes]
    for name, _, deps in boxes:
        for dep in deps:
            if dep not in x_of:
                continue
            x1, x2 = x_of[dep], x_of[name]
            if abs(order.index(dep) - order.index(name)) == 1:
                # Neighbours: a straight arrow across the gap between the boxes.
                start, end = (x1 + BOX_WIDTH, x2) if x1 < x2 else (x1, x2 + BOX_WIDTH)
                y = top + 24
                parts.append(
                    f'<line x1="{start}" y1="{y}" x2="{end}" y2="{y}" stroke="#555" marker-end="url(#arrow)"/>'
                )
            else:
                # Farther apart: an arc over the boxes in between, from top centre to top centre.
                start, end = x1 + BOX_WIDTH // 2, x2 + BOX_WIDTH // 2
                lift = 18 + 8 * abs(order.index(dep) - order.index(name))
                parts.append(
                    f'<path d="M{start},{top} C{start},{top - lift} {end},{top - lift} {end},{top}" '
                    'fill="none" stroke="#555" marker-end="url(#arrow)"/>'
                )
    parts.append(
        f'<text x="{GAP}" y="{height + top + 28}" fill="#555">Generated from the synthesized templates by '
        "tools/diagram.py (make diagram). Arrows: stack dependencies.</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _synthesize(env: str, outdir: Path) -> Path:
    """Synthesize the app for one environment in-process (no AWS access)."""
    import json as _json

    import aws_cdk as cdk

    from stacks.app_builder import build_app

    repo = Path(__file__).resolve().parent.parent
    context = _json.loads((repo / "cdk.json").read_text())["context"]
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
    if not stacks:
        print(f"no stacks for environment {args.env!r} in {assembly}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render_svg(args.env, stacks))
    print(f"wrote {args.out} ({len(stacks)} stacks)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
