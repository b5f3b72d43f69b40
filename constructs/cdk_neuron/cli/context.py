"""What a command reads from outside its arguments, in one object that tests replace.

A :class:`Context` carries the AWS client factory (boto3 by default; moto or Stubber clients in
tests), the clock (``now`` and ``sleep``: polling and timestamps), the output streams and mode, how
``--synth`` runs the CDK CLI, and where the environments come from (``--config``, ``--app``,
``--synth``, read once on first use). ``cdk_neuron.cli.main.main`` builds one from the command line;
a test builds its own and passes it in::

    main(["status", JOB, "--json"], context=Context(clients=stubbed, clock=FrozenClock(...)))
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol, TextIO, TypeVar

from cdk_neuron.cli import source
from cdk_neuron.cli.aws import Boto3Clients, ClientFactory
from cdk_neuron.cli.output import OutputMode, Report, print_json
from cdk_neuron.cli.output import render as render_report
from cdk_neuron.cli.result import Result
from cdk_neuron.deployment import Deployment

R = TypeVar("R", bound=Result)


class Clock(Protocol):
    """Time as commands see it."""

    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait between polls."""
        ...


class SystemClock:
    """The machine's clock."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass(frozen=True)
class SourceOptions:
    """Where the environments come from: at most one of ``--config``, ``--app`` and ``--synth``."""

    config: str | None = None
    app: str | None = None
    synth: bool = False

    def arguments(self) -> tuple[str, ...]:
        """The options that name this source again, for the command lines the CLI prints."""
        if self.config:
            return ("--config", self.config)
        if self.app:
            return ("--app", self.app)
        return ("--synth",) if self.synth else ()


@dataclass
class Context:
    """Everything outside a command's arguments. Every field has the default a real run uses.

    :param clients: ``(service, region) -> client``. Default: boto3, with ``profile``'s session,
        created on first use (so offline commands never import boto3).
    :param clock: ``now()`` and ``sleep()``. Default: the system clock.
    :param stdout: where results go. Default: ``sys.stdout`` at the time of writing.
    :param stderr: where progress and errors go. Default: ``sys.stderr`` at the time of writing.
    :param output: ``table``, ``json`` or ``text``. Default: ``table``.
    :param profile: the AWS profile of the default client factory. Default: the boto3 chain.
    :param sources: ``--config`` / ``--app`` / ``--synth``. Default: none (./cdk.json's loader, else
        ./cdk.out).
    :param run: how ``--synth`` runs the CDK CLI. Default: ``subprocess.run``.
    :param cwd: the folder the default sources are looked for in. Default: the current folder.
    """

    clients: ClientFactory | None = None
    clock: Clock = field(default_factory=SystemClock)
    stdout: TextIO | None = None
    stderr: TextIO | None = None
    output: OutputMode = "table"
    profile: str | None = None
    sources: SourceOptions = field(default_factory=SourceOptions)
    run: source.Run = subprocess.run
    cwd: str | Path | None = None
    _source: source.Source | None = field(default=None, init=False, repr=False, compare=False)

    def configured(self, **changes: Any) -> Context:
        """A copy with the command line's settings (``output``, ``profile``, ``sources``) applied."""
        return replace(self, **changes)

    # -- the outside world ---------------------------------------------------------------------

    @property
    def out(self) -> TextIO:
        return self.stdout if self.stdout is not None else sys.stdout

    @property
    def err(self) -> TextIO:
        return self.stderr if self.stderr is not None else sys.stderr

    def aws(self, service: str, region: str) -> Any:
        """A client of ``service`` in ``region`` (the first call checks that credentials exist)."""
        if self.clients is None:
            self.clients = Boto3Clients(self.profile)
        return self.clients(service, region)

    # -- the app's environments ----------------------------------------------------------------

    @property
    def source(self) -> source.Source:
        """The environments and how the app deploys them, read once from ``sources``."""
        if self._source is None:
            self._source = source.load(
                config=self.sources.config,
                app=self.sources.app,
                synth=self.sources.synth,
                run=self.run,
                cwd=self.cwd,
            )
        return self._source

    @property
    def deployments(self) -> dict[str, Deployment]:
        return self.source.deployments

    def command_line(self, env: Deployment, *args: str) -> str:
        """A cdk-neuron command line for ``env`` that reads the same source (what the user types next)."""
        return " ".join(
            [
                "cdk-neuron",
                *args,
                *(shlex.quote(o) for o in self.sources.arguments()),
                "--env",
                shlex.quote(env.name),
            ]
        )

    # -- output --------------------------------------------------------------------------------

    def show(self, result: R, render: Callable[[R], Report] | None) -> None:
        """A result: its JSON document with ``--output json``, else its report as a table or text.

        ``render`` None: the command printed the result as it came (``logs``), so only ``--output
        json`` prints it, as one document at the end. Anything but a :class:`Result` is a
        programming error (every command's output is typed), refused whatever the output mode.
        """
        if not isinstance(result, Result):
            raise TypeError(f"ctx.show() takes a cdk_neuron.cli.result.Result, not {type(result).__name__}")
        if self.output == "json":
            print_json(result.to_json(), self.out)
        elif render is not None:
            render_report(render(result), self.output, self.out)

    def line(self, text: str) -> None:
        """One line of progress on stdout (``status --watch``, ``logs``), printed at once."""
        print(text, file=self.out, flush=True)

    def note(self, text: str) -> None:
        """One line for the person at the terminal, on stderr: ``cdk-neuron: <text>``."""
        print(f"cdk-neuron: {text}", file=self.err)


__all__ = ["Clock", "Context", "SourceOptions", "SystemClock"]
