"""What every ``metric_*()`` method of a cdk-neuron construct accepts and defaults to, defined once.

The fleets, the training clusters and the checkpoint store build their metrics as aws-cdk-lib's
resources do: a documented default statistic, a 5-minute period (CloudWatch's and aws-cdk-lib's
default), and ``aws_cloudwatch.MetricOptions`` keywords to override either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw
from constructs import IConstruct

DEFAULT_PERIOD = cdk.Duration.minutes(5)
"""The period of a ``metric_*()`` method when none is given."""


class MetricOptions(TypedDict, total=False):
    """The overrides every ``metric_*()`` method accepts, as ``aws_cloudwatch.MetricOptions`` keywords.

    Each is optional; a method's own default applies to what is not given (``period``: 5 minutes,
    ``statistic``: the one documented on the method). ``dimensions_map`` replaces the metric's
    dimensions.
    """

    account: str
    color: str
    dimensions_map: Mapping[str, str]
    id: str
    label: str
    period: cdk.Duration
    region: str
    stack_account: str
    stack_region: str
    statistic: str
    unit: cw.Unit
    visible: bool


class MathOptions(TypedDict, total=False):
    """The overrides a ``metric_*()`` method that returns a ``MathExpression`` accepts."""

    color: str
    label: str
    period: cdk.Duration


def merged(defaults: MetricOptions, options: MetricOptions) -> MetricOptions:
    """``options`` over a method's ``defaults``."""
    result = MetricOptions(**defaults)
    result.update(options)
    return result


def with_options(metric: cw.Metric, options: MetricOptions) -> cw.Metric:
    """``metric`` with the overrides other than ``period`` and ``statistic`` (which the caller applied
    when it built the metric, so its label names the statistic). Unchanged when there are none."""
    return metric.with_(
        account=options.get("account"),
        color=options.get("color"),
        dimensions_map=options.get("dimensions_map"),
        id=options.get("id"),
        label=options.get("label"),
        region=options.get("region"),
        stack_account=options.get("stack_account"),
        stack_region=options.get("stack_region"),
        unit=options.get("unit"),
        visible=options.get("visible"),
    )


def with_math_options(expression: cw.MathExpression, options: MathOptions) -> cw.MathExpression:
    """``expression`` with the ``color`` and ``label`` overrides (the caller applied ``period`` when it
    built the expression). Unchanged when there are none."""
    if "color" in options or "label" in options:
        return expression.with_(color=options.get("color"), label=options.get("label"))
    return expression


def resource_metric(
    scope: IConstruct,
    namespace: str,
    metric_name: str,
    dimensions_map: Mapping[str, str],
    *,
    statistic: str,
    options: MetricOptions,
) -> cw.Metric:
    """A metric of ``scope`` as aws-cdk-lib's resources build theirs: defaults, overrides, attached."""
    props: dict[str, Any] = {"statistic": statistic, "period": DEFAULT_PERIOD, **options}
    dimensions = props.pop("dimensions_map", dimensions_map)
    return cw.Metric(
        namespace=namespace, metric_name=metric_name, dimensions_map=dimensions, **props
    ).attach_to(scope)


__all__ = [
    "DEFAULT_PERIOD",
    "MathOptions",
    "MetricOptions",
    "merged",
    "resource_metric",
    "with_math_options",
    "with_options",
]
