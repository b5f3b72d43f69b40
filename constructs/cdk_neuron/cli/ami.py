"""``cdk-neuron ami``: the Neuron AMI release each environment boots, the newest AWS publishes, and taking it.

The nodes boot a pinned release (:mod:`cdk_neuron.ami`), so a newer AMI never arrives with an
unrelated deploy. This command shows, per environment and Region, the pinned release and the AMI
it resolves to, and the release ``.../neuron/recommended`` names now. ``--take`` writes the newest
release into the app's cdk.json (``environments.<env>.ami_release``; apps whose cdk.json has no
such key pass ``cdk_neuron.ami.machine_image(<release>)`` to their constructs instead). Review the
change, then ``cdk-neuron impact`` shows what deploying it does: a Batch infrastructure update
(running jobs get their update timeout) and a replacement of each EC2 fleet.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from cdk_neuron import ami
from cdk_neuron.cli.command import Command, environment_options, in_region, selected
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Column, Report
from cdk_neuron.cli.result import OMIT_IF_NONE, Result
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.errors import NeuronConfigError


@dataclass(frozen=True)
class EnvironmentAmi:
    name: str
    region: str
    pinned: str
    pinned_image_id: str | None
    """None: the pinned release is not published in this Region."""
    newest: str
    newest_image_id: str
    taken: bool = field(default=False)
    cdk_json: str | None = field(default=None, metadata=OMIT_IF_NONE)

    @property
    def current(self) -> bool:
        return self.pinned == self.newest


@dataclass(frozen=True)
class AmiResult(Result):
    command = "ami"
    environments: list[EnvironmentAmi]
    summary: str


def render(result: AmiResult) -> Report:
    out = Report()
    out.table(
        "Neuron AMI release per environment",
        (
            Column("environment", "id"),
            Column("region", "id"),
            Column("pinned"),
            Column("newest"),
            Column("status", "status"),
        ),
        (
            (
                e.name,
                e.region,
                f"{e.pinned} ({e.pinned_image_id or 'not published in this Region'})",
                f"{e.newest} ({e.newest_image_id})",
                "taken" if e.taken else "current" if e.current else "newer available",
            )
            for e in result.environments
        ),
    )
    out.line(result.summary, style="bold")
    return out


_RELEASE_VALUE = re.compile(r'("ami_release"\s*:\s*)"[^"]*"')


def take(cdk_json: Path, env: str, release: str) -> None:
    """Set ``environments.<env>.ami_release`` in ``cdk_json``, keeping the file's formatting."""
    ami.check_release("ami_release", release)
    text = cdk_json.read_text()
    environments = json.loads(text).get("context", {}).get("environments", {})
    if env not in environments or "ami_release" not in environments[env]:
        raise NeuronConfigError(
            f"environments.{env}.ami_release",
            None,
            f"{cdk_json} has no such key to update: add it, or pass cdk_neuron.ami.machine_image('{release}') to "
            "your constructs",
        )
    # Replace the key inside this environment's object only (the first occurrence after its name).
    start = text.index(f'"{env}"', text.index('"environments"'))
    match = _RELEASE_VALUE.search(text, start)
    assert match is not None
    updated = text[: match.start()] + f'{match.group(1)}"{release}"' + text[match.end() :]
    if json.loads(updated)["context"]["environments"][env]["ami_release"] != release:
        raise NeuronConfigError(
            f"environments.{env}.ami_release", None, f"could not update {cdk_json}: edit it by hand"
        )
    cdk_json.write_text(updated)


def _arguments(parser: argparse.ArgumentParser) -> None:
    environment_options(parser, one=False)
    parser.add_argument(
        "--take",
        action="store_true",
        help="write the newest release into cdk.json (environments.<env>.ami_release); review it, then run impact",
    )


def _run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
    envs = in_region(selected(ctx.deployments, args), args.region)
    config = Path(ctx.sources.config or Path(ctx.cwd or ".") / "cdk.json")
    found = []
    for env in envs:
        pinned = env.ami_release or ami.RELEASE
        ssm = ctx.aws("ssm", env.region)
        newest = ami.newest(ssm)
        taken = False
        if args.take and newest.name != pinned:
            take(config, env.name, newest.name)
            taken = True
        found.append(
            EnvironmentAmi(
                name=env.name,
                region=env.region,
                pinned=pinned,
                pinned_image_id=ami.resolve(ssm, pinned),
                newest=newest.name,
                newest_image_id=newest.image_id,
                taken=taken,
                cdk_json=str(config) if taken else None,
            )
        )
    stale = [e.name for e in found if not e.current and not e.taken]
    moved = [e for e in found if e.taken]
    if moved:
        names = ", ".join(e.name for e in moved)
        summary = f"Took {moved[0].newest} for {names} in {config}: review it, then cdk-neuron impact"
    elif stale:
        summary = f"A newer release is published for {', '.join(stale)}: cdk-neuron ami --take to move to it"
    else:
        summary = "Every environment boots the newest release"
    ctx.show(AmiResult(environments=found, summary=summary), render)
    missing = [e for e in found if e.pinned_image_id is None]
    return ExitStatus.FAILED if missing else ExitStatus.OK


COMMAND = Command(
    "ami",
    "The Neuron AMI release each environment boots, the newest published, and --take to move to it.",
    _run,
    arguments=_arguments,
    aws=True,
)

__all__ = ["COMMAND", "AmiResult", "EnvironmentAmi", "render", "take"]
