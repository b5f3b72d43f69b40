"""Every timeout and keep-alive on the paths from a request, or a job submission, to an answer.

Plain Python (no ``aws_cdk``): the single place these numbers come from. The constructs read them
(the load balancer, the target group, the Auto Scaling group and its hooks, the Batch job
definition and retry rules), so do the node programs (through the settings user data and the job
definition write: nginx, ``ready.sh``, the launcher and ``peer_watch.py``), and
``docs/timeouts-and-keep-alives.md`` is generated from the same :class:`Chain` objects
(``make timeouts-doc``). Change a number here and everything that depends on it moves with it; the
tests check that every chain still nests (:meth:`Chain.violations`).

Two rules decide the nesting, each link states which one it follows:

- **within**: an inner step must give up before the step around it does, so the innermost layer
  reports the failure (with its own log line) instead of an outer one cutting it off blind. A
  request's proxy read timeout is within the load balancer's idle timeout; a node's start-up
  deadline is within its start-up budget, which is within CloudFormation's wait and within what
  the lifecycle hook's heartbeats can hold; a stalled start-up fails before the hook's heartbeat
  timeout ends.
- **outlasts**: on a reused connection the side that *receives* requests must keep an idle
  connection open longer than the side that *sends* them, or the sender writes a request into a
  connection the receiver is closing and gets a reset (Elastic Load Balancing: "we recommend that
  you configure the idle timeout of your application to be larger than the idle timeout configured
  for the load balancer", Application Load Balancers, "Connection idle timeout",
  https://docs.aws.amazon.com/elasticloadbalancing/latest/application/application-load-balancers.html#connection-idle-timeout,
  read 2026-12-01).

Start-up budgets (how long a serving instance may take to load a model) are computed per model by
:mod:`cdk_neuron.serving.timing` and enter the serving start-up chain here; the training peer-join
budget is computed here from what a child node has to do before its container runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Kind = Literal["timeout", "keep-alive", "interval", "budget", "limit"]
Rule = Literal["within", "outlasts"]

SAFETY = 1.5
"""Margin on budgets built from assumptions or measurements, stated once: the start-up budgets of
:mod:`cdk_neuron.serving.timing` (every phase, EC2 and SageMaker) and the training peer-join wait use it."""


@dataclass(frozen=True)
class Timeout:
    """One timeout, keep-alive or interval on a path.

    :ivar key: the name the chain's nesting rules use.
    :ivar seconds: its value.
    :ivar kind: ``timeout`` (gives up), ``keep-alive`` (idle connection kept), ``interval`` (how often),
        ``budget`` (time allowed for a piece of work), ``limit`` (a service maximum).
    :ivar where: what enforces it (the resource property, the program and setting).
    :ivar why: where the value comes from (a source, or the derivation).
    """

    key: str
    seconds: int
    kind: Kind
    where: str
    why: str


@dataclass(frozen=True)
class Nesting:
    """``outer`` must exceed ``inner`` by at least ``margin`` seconds (``within``), or ``inner`` must
    outlast ``outer`` by at least ``margin`` (``outlasts``)."""

    outer: str
    inner: str
    rule: Rule
    margin: int = 1
    why: str = ""


@dataclass(frozen=True)
class Chain:
    """The timeouts on one path, outermost first, and the rules that make them nest."""

    name: str
    path: str
    timeouts: tuple[Timeout, ...]
    nesting: tuple[Nesting, ...]

    def __getitem__(self, key: str) -> Timeout:
        for timeout in self.timeouts:
            if timeout.key == key:
                return timeout
        raise KeyError(f"{self.name} has no timeout {key!r}")

    def seconds(self, key: str) -> int:
        return self[key].seconds

    def violations(self) -> list[str]:
        """Every rule of :attr:`nesting` the values break, as sentences (empty when they nest)."""
        broken = []
        for rule in self.nesting:
            outer, inner = self[rule.outer], self[rule.inner]
            if rule.rule == "within":
                ok = outer.seconds >= inner.seconds + rule.margin
                relation = f"{inner.key} ({inner.seconds} s) must end {rule.margin} s before {outer.key} ({outer.seconds} s)"
            else:
                ok = inner.seconds >= outer.seconds + rule.margin
                relation = f"{inner.key} ({inner.seconds} s) must outlast {outer.key} ({outer.seconds} s) by {rule.margin} s"
            if not ok:
                broken.append(f"{self.name}: {relation}")
        return broken


# ------------------------------------------------------------------------------------------------
# Serving on EC2: a request from a client to a model server
# ------------------------------------------------------------------------------------------------

ALB_IDLE_TIMEOUT = 300
"""The load balancer's idle timeout (``idle_timeout.timeout_seconds``, default 60): a long prompt's
time to first token, or a pause in a token stream, can exceed 60 s."""
DEREGISTRATION_DELAY = 300
"""How long a target the group removes (scale-in, replacement) keeps its in-flight requests."""
NGINX_KEEPALIVE_TIMEOUT = ALB_IDLE_TIMEOUT + 10
"""The host proxy keeps an idle load-balancer connection this long: longer than the ALB's idle timeout."""
NGINX_PROXY_TIMEOUT = ALB_IDLE_TIMEOUT - 10
"""nginx's ``proxy_read_timeout``/``proxy_send_timeout``: a stalled replica is reported by nginx (504
with a log line) before the load balancer's idle timeout cuts the client off."""
NGINX_CONNECT_TIMEOUT = 5
"""nginx's ``proxy_connect_timeout`` to a loopback replica: a refused or stuck replica is skipped fast."""
ENGINE_KEEPALIVE = 5
"""The model servers' idle keep-alive: uvicorn's ``timeout_keep_alive``, which vLLM sets from
``VLLM_HTTP_TIMEOUT_KEEP_ALIVE``, default 5 (vllm-project/vllm ``vllm/envs.py``; optimum-neuron and the
vLLM Neuron DLC serve through vLLM's API server)."""
NGINX_UPSTREAM_KEEPALIVE = ENGINE_KEEPALIVE - 1
"""nginx drops an idle connection to a replica before the replica does (upstream ``keepalive_timeout``)."""
CLIENT_READ_TIMEOUT = ALB_IDLE_TIMEOUT + 10
"""What a client's read timeout should be at least (the integ suites use it): longer than every
silence the path allows, so the load balancer or nginx answers first."""
HEALTH_CHECK_INTERVAL = 15
HEALTH_CHECK_TIMEOUT = 10
HEALTHY_THRESHOLD = 2
UNHEALTHY_THRESHOLD = 3
NGINX_HEALTH_TRY = 3
"""On the health path, nginx gives each replica this long to connect and answer before it tries the
next (``proxy_connect_timeout``/``proxy_read_timeout`` in ``location = HEALTH_PATH``)."""
NGINX_HEALTH_BUDGET = HEALTH_CHECK_TIMEOUT - 2
"""All tries of one health check (``proxy_next_upstream_timeout``): below the load balancer's health-check
timeout, so a hung replica is skipped and the check still answers in time (nginx's proxy_next_upstream
fires on ``timeout`` only when the read timeout passes, which on the main path is 290 s)."""
HEALTH_CHECK_GRACE = HEALTH_CHECK_INTERVAL * (HEALTHY_THRESHOLD + 1)
"""The Auto Scaling group's health-check grace period, counted from InService. The launch lifecycle
hook already holds an instance until its replicas answer, so the grace only has to cover the load
balancer confirming it (``HEALTHY_THRESHOLD`` checks): "If you use lifecycle hooks for instance launch,
you can set the health check grace period to 0" and "Setting this value too high reduces the
effectiveness of the Amazon EC2 Auto Scaling health checks" ("Set the health check grace period for an
Auto Scaling group", Amazon EC2 Auto Scaling User Guide,
https://docs.aws.amazon.com/autoscaling/ec2/userguide/health-check-grace-period.html, read 2026-12-01)."""
INSTANCE_WARMUP = 60
"""``DefaultInstanceWarmup`` and target tracking's warm-up: readiness is gated by the hook, so a new
instance's metrics count almost at once."""
REPLICA_STOP_TIMEOUT = 60
"""``docker stop --time``: a replica gets this long after SIGTERM to finish its requests."""
REPLICA_UNIT_STOP_TIMEOUT = REPLICA_STOP_TIMEOUT + 30
"""systemd's ``TimeoutStopSec`` for a replica unit: longer than docker's own stop."""
REPLICA_RESTART_DELAY = 10
"""systemd's ``RestartSec``: a replica that exits is started again after this long."""
METRICS_INTERVAL = 20
"""How often each instance publishes its in-flight requests for target tracking."""


def serving_request_chain() -> Chain:
    """A request from a client inside the VPC to a replica on an EC2 serving instance, and back."""
    return Chain(
        name="EC2 serving: request",
        path="client -> internal ALB -> host nginx on the instance -> replica (model server)",
        timeouts=(
            Timeout(
                "client_read",
                CLIENT_READ_TIMEOUT,
                "timeout",
                "your HTTP client (the integ suites use this value)",
                "at least the longest silence the path allows, so a server-side timeout answers first",
            ),
            Timeout(
                "alb_idle",
                ALB_IDLE_TIMEOUT,
                "timeout",
                "ALB attribute idle_timeout.timeout_seconds (Ec2InferenceFleet)",
                "a long prompt's time to first token can exceed the 60 s default",
            ),
            Timeout(
                "nginx_keepalive",
                NGINX_KEEPALIVE_TIMEOUT,
                "keep-alive",
                "nginx keepalive_timeout (serving/nginx.conf.in)",
                "the proxy keeps idle ALB connections open longer than the ALB does (ELB's recommendation)",
            ),
            Timeout(
                "nginx_proxy",
                NGINX_PROXY_TIMEOUT,
                "timeout",
                "nginx proxy_read_timeout and proxy_send_timeout",
                "a stalled replica is reported by nginx (504, logged) before the ALB cuts the client off",
            ),
            Timeout(
                "nginx_connect",
                NGINX_CONNECT_TIMEOUT,
                "timeout",
                "nginx proxy_connect_timeout",
                "a loopback replica that does not accept is skipped at once",
            ),
            Timeout(
                "engine_keepalive",
                ENGINE_KEEPALIVE,
                "keep-alive",
                "the model server (uvicorn in vLLM: VLLM_HTTP_TIMEOUT_KEEP_ALIVE)",
                "vLLM's default (vllm/envs.py); cdk-neuron leaves it",
            ),
            Timeout(
                "nginx_upstream_keepalive",
                NGINX_UPSTREAM_KEEPALIVE,
                "keep-alive",
                "nginx upstream keepalive_timeout",
                "nginx drops an idle replica connection before the replica does",
            ),
            Timeout(
                "deregistration_delay",
                DEREGISTRATION_DELAY,
                "timeout",
                "target group deregistration_delay.timeout_seconds",
                "a removed instance keeps serving its streams at least one idle timeout long",
            ),
        ),
        nesting=(
            Nesting(
                "client_read", "alb_idle", "within", why="the ALB answers (504) before the client gives up"
            ),
            Nesting(
                "alb_idle", "nginx_proxy", "within", margin=5, why="nginx reports a stalled replica first"
            ),
            Nesting(
                "alb_idle", "nginx_keepalive", "outlasts", margin=5, why="ALB reuses connections nginx keeps"
            ),
            Nesting("nginx_proxy", "nginx_connect", "within", why="connecting is part of proxying"),
            Nesting(
                "nginx_upstream_keepalive",
                "engine_keepalive",
                "outlasts",
                why="nginx reuses connections the server keeps",
            ),
            Nesting(
                "deregistration_delay", "alb_idle", "within", margin=0, why="draining covers an idle stream"
            ),
        ),
    )


def serving_health_chain() -> Chain:
    """How a replica's health is checked and a dead one replaced, once an instance is in service."""
    return Chain(
        name="EC2 serving: health",
        path="ALB target health check -> Auto Scaling ELB health check -> systemd restarts the replica",
        timeouts=(
            Timeout(
                "health_grace",
                HEALTH_CHECK_GRACE,
                "timeout",
                "Auto Scaling HealthCheckGracePeriod",
                "counted from InService; the launch hook already waited for the replicas, so only the ALB's "
                "confirmation is covered",
            ),
            Timeout(
                "health_interval",
                HEALTH_CHECK_INTERVAL,
                "interval",
                "target group HealthCheckIntervalSeconds",
                "15 s",
            ),
            Timeout(
                "health_timeout",
                HEALTH_CHECK_TIMEOUT,
                "timeout",
                "target group HealthCheckTimeoutSeconds",
                "below the interval",
            ),
            Timeout(
                "nginx_health",
                NGINX_HEALTH_BUDGET,
                "timeout",
                "nginx proxy_next_upstream_timeout on the health path (location = HEALTH_PATH)",
                "every replica nginx tries for one check, inside the load balancer's timeout",
            ),
            Timeout(
                "nginx_health_try",
                NGINX_HEALTH_TRY,
                "timeout",
                "nginx proxy_connect_timeout and proxy_read_timeout on the health path",
                "a hung replica is skipped after this, and the next one asked",
            ),
            Timeout(
                "healthy_after",
                HEALTH_CHECK_INTERVAL * HEALTHY_THRESHOLD,
                "budget",
                "HealthyThresholdCount x interval",
                "time for the ALB to put a new instance in rotation",
            ),
            Timeout(
                "unhealthy_after",
                HEALTH_CHECK_INTERVAL * UNHEALTHY_THRESHOLD,
                "budget",
                "UnhealthyThresholdCount x interval",
                "time for the ALB to take a dead instance out of rotation",
            ),
            Timeout(
                "replica_unit_stop",
                REPLICA_UNIT_STOP_TIMEOUT,
                "timeout",
                "cdk-neuron-replica@.service TimeoutStopSec",
                "systemd waits for docker's own stop",
            ),
            Timeout(
                "replica_stop",
                REPLICA_STOP_TIMEOUT,
                "timeout",
                "docker stop --time (ExecStop)",
                "SIGTERM to SIGKILL",
            ),
            Timeout(
                "replica_restart",
                REPLICA_RESTART_DELAY,
                "interval",
                "cdk-neuron-replica@.service RestartSec",
                "restart a dead replica",
            ),
        ),
        nesting=(
            Nesting(
                "health_timeout",
                "nginx_health",
                "within",
                why="a check that meets a hung replica still answers before the load balancer gives up",
            ),
            Nesting("nginx_health", "nginx_health_try", "within", why="a second replica gets its try"),
            Nesting(
                "health_interval",
                "health_timeout",
                "within",
                why="ELB requires the timeout below the interval",
            ),
            Nesting(
                "health_grace",
                "healthy_after",
                "within",
                margin=0,
                why="the grace covers the ALB's confirmation",
            ),
            Nesting(
                "replica_unit_stop",
                "replica_stop",
                "within",
                margin=10,
                why="systemd does not kill docker's stop",
            ),
        ),
    )


LIFECYCLE_HEARTBEAT_MAX = 7200
"""An Auto Scaling lifecycle hook's ``HeartbeatTimeout`` ranges from 30 to 7,200 s (PutLifecycleHook,
Amazon EC2 Auto Scaling API Reference, https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_PutLifecycleHook.html,
read 2026-12-02; deploy rule E9303)."""
LIFECYCLE_GLOBAL_MAX = 48 * 3600
LIFECYCLE_GLOBAL_FACTOR = 100
"""An instance stays in a wait state at most ``GlobalTimeout``: "The maximum is 172800 seconds (48 hours)
or 100 times HeartbeatTimeout, whichever is smaller" (LifecycleHook, Amazon EC2 Auto Scaling API
Reference, https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_LifecycleHook.html, read
2026-12-02). Each ``RecordLifecycleActionHeartbeat`` "extends the timeout by the length of time defined
using the PutLifecycleHook API call" (RecordLifecycleActionHeartbeat, same reference,
https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_RecordLifecycleActionHeartbeat.html)."""
CREATION_POLICY_MAX = 12 * 3600
"""CloudFormation's CreationPolicy ResourceSignal Timeout is at most 12 hours (PT12H)."""
LAUNCH_ATTEMPTS = 2
"""Launches the first deployment tolerates per instance: an abandoned first instance is replaced and
the stack waits for the replacement instead of failing (defect: one abandoned launch failed creation)."""
READY_MARGIN = 120
"""``ready.sh`` gives up this long before the start-up budget ends, so its ABANDON, its log line and
its launch-failure metric happen before Auto Scaling's default result does. Its deadline counts
from the kernel's boot (``/proc/uptime``) while the hook counts from its start a little earlier (an
instance is in ``Pending:Wait`` while EC2 starts it), so the margin also covers the time from
``Pending:Wait`` to the kernel's first tick."""
LIFECYCLE_POLL_INTERVAL = 5
"""How often ``serving/lifecycle-watch.sh`` reads the instance's target lifecycle state from instance
metadata (``autoscaling/target-lifecycle-state``), to see an instance that scale-in returns to the
warm pool (``Warmed:Pending:Wait``, which only the instance can complete)."""
PROGRESS_INTERVAL = 60
"""How often ``serving/progress.sh`` looks at the start-up, and records a lifecycle action heartbeat
when it moved since the last look."""
PROGRESS_STALL = 300
"""A start-up that made no progress for this long fails (``progress.sh``: logged where it outlives the
instance, then ABANDON): longer than every step that shows no progress while it runs correctly (the
data volume's 120 s wait, the Neuron devices' ``NEURON_DEVICE_WAIT``, the 50 s of back-off in five
retries)."""
PROGRESS_REPORT = 30
"""What a stalled start-up needs to say so and abandon (``fail``: a log line, a metric, the ABANDON
call; each an AWS request with the CLI's own retries)."""
LIFECYCLE_PROGRESS_WINDOW = PROGRESS_STALL + 2 * PROGRESS_INTERVAL + PROGRESS_REPORT
"""The launch hook's ``HeartbeatTimeout``: the longest a starting instance may go without a heartbeat,
no longer the whole start-up. A stall is seen at most one interval after it reaches
:data:`PROGRESS_STALL` and reported within :data:`PROGRESS_REPORT`, and the heartbeat of the last
look that saw progress may itself have failed (one more interval back to the one before), so the
node's own failure always comes first; an instance whose programs died (a hung kernel, a failed
cloud-init) is abandoned after this window instead of after the worst-case start-up."""


def lifecycle_global_seconds(heartbeat_seconds: int = LIFECYCLE_PROGRESS_WINDOW) -> int:
    """The longest an instance can be held in ``Pending:Wait`` by heartbeats of a hook with this
    ``HeartbeatTimeout``: ``min(48 h, 100 x HeartbeatTimeout)``."""
    return min(LIFECYCLE_GLOBAL_MAX, LIFECYCLE_GLOBAL_FACTOR * heartbeat_seconds)


POOL_RETURN_HEARTBEAT = LIFECYCLE_POLL_INTERVAL + REPLICA_UNIT_STOP_TIMEOUT + 30
"""``HeartbeatTimeout`` of the warm-pool return hook (``EC2_INSTANCE_TERMINATING``, default CONTINUE):
an instance that scale-in returns to the warm pool "pauses at the Warmed:Pending:Wait state for the
EC2_INSTANCE_TERMINATING lifecycle action" ("Use lifecycle hooks with a warm pool in Auto Scaling
group", Amazon EC2 Auto Scaling User Guide,
https://docs.aws.amazon.com/autoscaling/ec2/userguide/warm-pool-instance-lifecycle.html, read
2026-12-02), so the lifecycle watch can stop its replicas first: one look, the replicas' unit stop, and
30 s to complete the action. Every other termination of the group also waits this long at most."""


def hook_heartbeat_seconds(boot_seconds: int) -> int:
    """The launch hook's ``HeartbeatTimeout``: the progress window, or longer where the boot (launch
    until the node programs run, when no heartbeat can come yet) needs it, at most 7,200 s."""
    return min(max(LIFECYCLE_PROGRESS_WINDOW, boot_seconds + PROGRESS_INTERVAL), LIFECYCLE_HEARTBEAT_MAX)


STARTUP_MAX = min(lifecycle_global_seconds() - 1, CREATION_POLICY_MAX)
"""The longest start-up budget an EC2 serving fleet may have: below the hook's global timeout with the
shortest heartbeat timeout, so the node's own deadline ends the wait and says why, and within
CloudFormation's 12-hour creation wait: 43,200 s."""


def serving_startup_chain(startup_seconds: int, boot_seconds: int) -> Chain:
    """From launch until an EC2 serving instance is in service, for a model that needs ``startup_seconds``;
    ``boot_seconds`` is the boot phase's budget (launch until the node programs run,
    :func:`cdk_neuron.serving.timing.ec2_startup_model`), before which no heartbeat can come."""
    return Chain(
        name="EC2 serving: start-up",
        path="CloudFormation (create) -> Auto Scaling launch hook -> boot.sh, ready.sh (every boot) and "
        "progress.sh -> replicas",
        timeouts=(
            Timeout(
                "creation_wait",
                creation_policy_seconds(startup_seconds),
                "timeout",
                "CreationPolicy ResourceSignal Timeout (stack creation)",
                f"{LAUNCH_ATTEMPTS} launches x the start-up budget, at most 12 h",
            ),
            Timeout(
                "hook_global",
                lifecycle_global_seconds(hook_heartbeat_seconds(boot_seconds)),
                "limit",
                "launch lifecycle hook GlobalTimeout (Auto Scaling, not configurable)",
                f"min(48 h, {LIFECYCLE_GLOBAL_FACTOR} x HeartbeatTimeout): the longest heartbeats can hold an instance",
            ),
            Timeout(
                "startup_budget",
                startup_seconds,
                "budget",
                "the model's start-up budget (cdk_neuron.serving.timing), counted from launch",
                "every phase's estimate x SAFETY; the load at the published figure",
            ),
            Timeout(
                "ready_deadline",
                ready_deadline_seconds(startup_seconds),
                "timeout",
                "STARTUP_DEADLINE_SECONDS (boot.sh's pull and sync, ready.sh), counted from boot (uptime)",
                f"the budget less {READY_MARGIN} s, so the node abandons and logs first",
            ),
            Timeout(
                "hook_heartbeat",
                hook_heartbeat_seconds(boot_seconds),
                "timeout",
                "launch lifecycle hook HeartbeatTimeout (default result ABANDON)",
                "the longest silence: a stall, an interval to see it, one failed heartbeat and the time to report it; "
                "progress.sh extends it while the start-up moves",
            ),
            Timeout(
                "progress_stall",
                PROGRESS_STALL,
                "timeout",
                "progress.sh PROGRESS_STALL_SECONDS",
                "no bytes written, or a replica down, for this long: the node fails and says why",
            ),
            Timeout(
                "boot",
                boot_seconds,
                "budget",
                "launch until boot.sh starts progress.sh (the timing model's boot phase)",
                "no heartbeat can come before the node programs run",
            ),
            Timeout(
                "progress_interval",
                PROGRESS_INTERVAL,
                "interval",
                "progress.sh PROGRESS_INTERVAL_SECONDS (RecordLifecycleActionHeartbeat on progress)",
                "several looks per stall window",
            ),
            Timeout(
                "instance_refresh_warmup",
                INSTANCE_WARMUP,
                "interval",
                "DefaultInstanceWarmup (instance refresh and target tracking)",
                "readiness is gated by the hook; the refresh waits for it, then this",
            ),
            Timeout(
                "pool_return",
                LIFECYCLE_POLL_INTERVAL + REPLICA_UNIT_STOP_TIMEOUT,
                "budget",
                "lifecycle-watch.sh: LIFECYCLE_POLL_SECONDS, then the replicas' stop",
                "an instance scale-in returns to the warm pool stops serving and completes its hook",
            ),
            Timeout(
                "return_hook_heartbeat",
                POOL_RETURN_HEARTBEAT,
                "timeout",
                "warm-pool return hook HeartbeatTimeout (EC2_INSTANCE_TERMINATING, default result CONTINUE)",
                "how long a returning (or terminating) instance waits for the watch before Auto Scaling goes on",
            ),
        ),
        nesting=(
            Nesting(
                "creation_wait",
                "startup_budget",
                "within",
                margin=0,
                why="a replacement launch fits the wait",
            ),
            Nesting(
                "hook_global",
                "startup_budget",
                "within",
                why="heartbeats can hold the instance for the whole start-up",
            ),
            Nesting(
                "startup_budget",
                "ready_deadline",
                "within",
                margin=READY_MARGIN,
                why="the node fails loudly first",
            ),
            Nesting(
                "hook_heartbeat",
                "progress_stall",
                "within",
                margin=2 * PROGRESS_INTERVAL + PROGRESS_REPORT,
                why="a stall is seen within an interval, after a heartbeat that may have failed, and "
                "reported before the hook gives up",
            ),
            Nesting(
                "hook_heartbeat",
                "boot",
                "within",
                why="the first heartbeat comes before the hook gives up on a booting instance",
            ),
            Nesting(
                "progress_stall",
                "progress_interval",
                "within",
                margin=3 * PROGRESS_INTERVAL,
                why="a stall is declared only after several looks saw nothing move",
            ),
            Nesting(
                "hook_heartbeat",
                "pool_return",
                "within",
                why="a returning instance completes Warmed:Pending:Wait before the hook gives up",
            ),
            Nesting(
                "return_hook_heartbeat",
                "pool_return",
                "within",
                why="the watch stops the replicas and completes the return before the terminating hook "
                "goes on without it",
            ),
        ),
    )


def creation_policy_seconds(startup_seconds: int) -> int:
    """CloudFormation's wait for the first instances: ``LAUNCH_ATTEMPTS`` launches, at most 12 h."""
    return min(LAUNCH_ATTEMPTS * startup_seconds, CREATION_POLICY_MAX)


def ready_deadline_seconds(startup_seconds: int) -> int:
    """Seconds after boot by which ``ready.sh`` must have every replica healthy."""
    return max(startup_seconds - READY_MARGIN, 1)


def serving_node_settings(startup_seconds: int) -> dict[str, int]:
    """The serving node programs' timing settings (``fleet.env``): ``ready.sh``'s deadline, the host
    nginx's timeouts and keep-alives, the replica units' stop and restart, the lifecycle watch, the
    progress watch."""
    return {
        "NEURON_DEVICE_WAIT": NEURON_DEVICE_WAIT,
        "STARTUP_DEADLINE_SECONDS": ready_deadline_seconds(startup_seconds),
        "NGINX_KEEPALIVE_TIMEOUT": NGINX_KEEPALIVE_TIMEOUT,
        "NGINX_PROXY_TIMEOUT": NGINX_PROXY_TIMEOUT,
        "NGINX_CONNECT_TIMEOUT": NGINX_CONNECT_TIMEOUT,
        "NGINX_UPSTREAM_KEEPALIVE": NGINX_UPSTREAM_KEEPALIVE,
        "NGINX_HEALTH_TRY": NGINX_HEALTH_TRY,
        "NGINX_HEALTH_BUDGET": NGINX_HEALTH_BUDGET,
        "REPLICA_STOP_TIMEOUT": REPLICA_STOP_TIMEOUT,
        "REPLICA_UNIT_STOP_TIMEOUT": REPLICA_UNIT_STOP_TIMEOUT,
        "REPLICA_RESTART_DELAY": REPLICA_RESTART_DELAY,
        "LIFECYCLE_POLL_SECONDS": LIFECYCLE_POLL_INTERVAL,
        "POOL_RETURN_HEARTBEAT_SECONDS": POOL_RETURN_HEARTBEAT,
        "PROGRESS_INTERVAL_SECONDS": PROGRESS_INTERVAL,
        "PROGRESS_STALL_SECONDS": PROGRESS_STALL,
    }


# ------------------------------------------------------------------------------------------------
# Serving on SageMaker: an InvokeEndpoint request, and an endpoint instance's start-up
# ------------------------------------------------------------------------------------------------

SAGEMAKER_INVOCATION_LIMIT = 60
"""SageMaker's limit for a model container's answer: "A customer's model containers must respond to
requests within 60 seconds" (InvokeEndpoint, Amazon SageMaker Runtime API Reference,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpoint.html, read 2026-12-01)."""
SAGEMAKER_CLIENT_READ_TIMEOUT = 70
"""The same page: "If your model is going to take 50-60 seconds of processing time, the SDK socket
timeout should be set to be 70 seconds" (botocore's default read timeout is 60)."""


def sagemaker_chain(model_data_download_seconds: int, container_startup_seconds: int) -> Chain:
    """An InvokeEndpoint request, and the start-up SageMaker allows an endpoint instance."""
    return Chain(
        name="SageMaker serving",
        path="client -> SageMaker Runtime InvokeEndpoint -> model container; start-up: download, then health check",
        timeouts=(
            Timeout(
                "client_read",
                SAGEMAKER_CLIENT_READ_TIMEOUT,
                "timeout",
                "your SDK's socket read timeout",
                "AWS's recommendation for models that answer in 50-60 s",
            ),
            Timeout(
                "invocation",
                SAGEMAKER_INVOCATION_LIMIT,
                "limit",
                "SageMaker (not configurable)",
                "InvokeEndpoint",
            ),
            Timeout(
                "model_download",
                model_data_download_seconds,
                "timeout",
                "ProductionVariant ModelDataDownloadTimeoutInSeconds",
                "cdk_neuron.serving.timing (60-3,600 s)",
            ),
            Timeout(
                "container_startup",
                container_startup_seconds,
                "timeout",
                "ProductionVariant ContainerStartupHealthCheckTimeoutInSeconds",
                "cdk_neuron.serving.timing (60-3,600 s)",
            ),
        ),
        nesting=(
            Nesting("client_read", "invocation", "within", why="SageMaker answers before the SDK gives up"),
        ),
    )


# ------------------------------------------------------------------------------------------------
# Training on AWS Batch: a job submission to a running multi-node job, and a lost node
# ------------------------------------------------------------------------------------------------

JOB_ATTEMPT_TIMEOUT = 7 * 24 * 3600
"""BatchTrainingCluster's default ``job_timeout`` (``attemptDurationSeconds``): a bound on the bill."""
INFRASTRUCTURE_UPDATE_TIMEOUT = 360 * 60
"""BatchTrainingCluster's default ``update_timeout`` (UpdatePolicy.JobExecutionTimeoutMinutes, whole
minutes): how long running jobs may run on after a deployment makes an infrastructure update of the
compute environment. Any new launch-template version is one ("Updating compute environments", AWS
Batch User Guide): a new AMI, but also any change to the node programs or node settings, whose
bundle key and values are in the template's user data."""
UNPLACEABLE_JOB_TIMEOUT = 600
"""The job queue cancels a job that can never be placed after this long in RUNNABLE."""
NEURON_DEVICE_WAIT = 60
"""How long a booting node waits for the Neuron driver's /dev/neuronN devices before it gives up
(``check_neuron_devices`` in the node programs' ``lib/common.sh``): the driver is loaded at boot, so
the devices are there within seconds or not at all."""
BOOT_FAILURE_LIMIT = 3
BOOT_FAILURE_WINDOW = 3600
"""A training cluster whose nodes fail their boot ``BOOT_FAILURE_LIMIT`` times within
``BOOT_FAILURE_WINDOW`` seconds stops launching them (``cdk_neuron.training.boot_failures``): a
deterministic failure (an unreachable installer, a broken AMI) otherwise relaunches, fails and bills
forever while the job waits RUNNABLE. Three leaves room for one unlucky node and one retry."""
NODE_BOOT_SECONDS = 180
"""Assumed: launch until cloud-init runs the node programs (EC2 boot of a large instance)."""
EFA_INSTALL_SECONDS = 600
"""Assumed: the EFA installer's download from S3 (``retry 5``) and its DKMS build of the efa module."""
TOPOLOGY_ATTEMPTS = 12
TOPOLOGY_STEP = 5
"""``node-setup.sh`` asks DescribeInstanceTopology up to ``TOPOLOGY_ATTEMPTS`` times, waiting
``TOPOLOGY_STEP`` x attempt seconds in between (EC2 fills in an UltraServer's CapacityBlockId late)."""
TRAINING_IMAGE_GIB = 32
"""Assumed size of a training image as pulled (the Neuron training DLCs are tens of GB unpacked)."""
IMAGE_PULL_MIB_PER_SECOND = 125
"""Assumed effective pull rate: gp3's baseline throughput bounds the layer writes (Amazon EBS User
Guide, "General Purpose SSD volumes"); the nodes' root volumes have 500 MiB/s, decompression is slower."""
PEER_HEARTBEAT_INTERVAL = 10
"""Every child node's launcher tells the main node's every this often that it is alive (peer_watch.py)."""
PEER_SILENCE = 60
"""The main node declares a child lost after this long without a word (a host that died sends no FIN)."""
PEER_STOP_GRACE = 20
"""SIGTERM to SIGKILL for the training processes when the launcher stops them; below the ECS agent's
30 s stop timeout (``ECS_CONTAINER_STOP_TIMEOUT``, Amazon ECS Developer Guide, "Amazon ECS container
agent configuration"), so the launcher's own cleanup finishes before the container is killed."""
ECS_CONTAINER_STOP_TIMEOUT = 30
TORCH_RENDEZVOUS_TIMEOUT = 600
"""torchrun's static rendezvous (``--master_addr``) waits this long for every node's agent
(``_default_timeout_seconds``, pytorch/pytorch torch/distributed/elastic/rendezvous/
static_tcp_rendezvous.py @109673f9); cdk-neuron leaves it: every node has joined the peer watch first."""
TORCH_PROCESS_GROUP_TIMEOUT = 1800
"""torch.distributed's default collective/store timeout for a process group (``default_pg_timeout``,
30 minutes, torch.distributed.init_process_group); your training code may pass another."""
NEURON_RT_EXEC_TIMEOUT = 30
"""The Neuron runtime's per-execution timeout default (``NEURON_RT_EXEC_TIMEOUT``, "Neuron Runtime
configuration", awsdocs-neuron, read 2026-12-01); training configurations often raise it."""
PEER_LOST_EXIT_CODE = 75
"""The main node's exit code when a peer was lost or never joined (EX_TEMPFAIL): the job definition's
retry rules retry it. Your own training code should not exit with it."""


def topology_wait_seconds() -> int:
    """The longest ``node-setup.sh`` waits for an instance's topology (its retry schedule)."""
    return sum(TOPOLOGY_STEP * attempt for attempt in range(1, TOPOLOGY_ATTEMPTS))


def image_pull_seconds(image_gib: float = TRAINING_IMAGE_GIB) -> int:
    return math.ceil(image_gib * 1024 / IMAGE_PULL_MIB_PER_SECOND)


def peer_join_seconds(image_gib: float = TRAINING_IMAGE_GIB) -> int:
    """How long the main node waits for every child node to join, from what a child has to do first.

    AWS Batch starts the child nodes only once the main node's container runs, in no fixed order or
    time ("Job lifecycle for MNP jobs", AWS Batch User Guide,
    https://docs.aws.amazon.com/batch/latest/userguide/job-lifecycle.html, read 2026-12-01), and a
    child's instance may still be booting: launch and boot, the EFA installer with its driver
    build, the topology wait on UltraServers, then its own pull of the multi-GB image. The sum,
    with ``SAFETY``, is the wait; a child that has not joined by then is lost, and the attempt ends
    with :data:`PEER_LOST_EXIT_CODE` to be retried on fresh nodes.
    """
    work = NODE_BOOT_SECONDS + EFA_INSTALL_SECONDS + topology_wait_seconds() + image_pull_seconds(image_gib)
    return math.ceil(SAFETY * work)


def training_job_chain(job_timeout_seconds: int = JOB_ATTEMPT_TIMEOUT) -> Chain:
    """A multi-node Batch job from submission until training, and a node lost while it runs."""
    join = peer_join_seconds()
    return Chain(
        name="Batch training: a multi-node job",
        path="job queue -> compute environment -> main node -> child nodes -> torchrun -> training step",
        timeouts=(
            Timeout(
                "job_attempt",
                job_timeout_seconds,
                "timeout",
                "job definition Timeout.AttemptDurationSeconds (job_timeout)",
                "a bound on the bill of one attempt",
            ),
            Timeout(
                "infrastructure_update",
                INFRASTRUCTURE_UPDATE_TIMEOUT,
                "timeout",
                "compute environment UpdatePolicy.JobExecutionTimeoutMinutes (update_timeout)",
                "a deploy that versions the launch template (new AMI, node programs or node settings) "
                "leaves running jobs this long, then replaces their nodes; the attempt is retried",
            ),
            Timeout(
                "unplaceable",
                UNPLACEABLE_JOB_TIMEOUT,
                "timeout",
                "job queue JobStateTimeLimitActions (RUNNABLE, CANCEL)",
                "only for jobs that can never be placed; waiting for capacity is not cancelled",
            ),
            Timeout(
                "peer_join",
                join,
                "budget",
                "CDK_NEURON_PEER_JOIN_TIMEOUT (launcher, peer_watch.py, rank_order.py)",
                f"{SAFETY} x (boot {NODE_BOOT_SECONDS} s + EFA {EFA_INSTALL_SECONDS} s + topology "
                f"{topology_wait_seconds()} s + pull of {TRAINING_IMAGE_GIB} GiB at {IMAGE_PULL_MIB_PER_SECOND} MiB/s "
                f"{image_pull_seconds()} s)",
            ),
            Timeout(
                "topology_wait",
                topology_wait_seconds(),
                "budget",
                "node-setup.sh TOPOLOGY_ATTEMPTS x TOPOLOGY_STEP",
                "EC2 fills in an UltraServer's CapacityBlockId some time after launch",
            ),
            Timeout(
                "torch_process_group",
                TORCH_PROCESS_GROUP_TIMEOUT,
                "timeout",
                "torch.distributed default_pg_timeout",
                "torch's default; your code may set another",
            ),
            Timeout(
                "torch_rendezvous",
                TORCH_RENDEZVOUS_TIMEOUT,
                "timeout",
                "torchrun static rendezvous",
                "torch's default; every node has joined the peer watch before torchrun starts",
            ),
            Timeout(
                "peer_silence",
                PEER_SILENCE,
                "timeout",
                "CDK_NEURON_PEER_SILENCE (peer_watch.py on the main node)",
                "a child that sent nothing for this long is lost: the attempt ends with exit 75 and is retried",
            ),
            Timeout(
                "peer_heartbeat",
                PEER_HEARTBEAT_INTERVAL,
                "interval",
                "CDK_NEURON_PEER_INTERVAL (peer_watch.py on children)",
                "several beats fit in the silence, so one delayed packet is not a loss",
            ),
            Timeout(
                "neuron_exec",
                NEURON_RT_EXEC_TIMEOUT,
                "timeout",
                "NEURON_RT_EXEC_TIMEOUT (Neuron runtime)",
                "the runtime's default per execution; left to your training configuration",
            ),
            Timeout(
                "ecs_stop",
                ECS_CONTAINER_STOP_TIMEOUT,
                "timeout",
                "ECS agent ECS_CONTAINER_STOP_TIMEOUT (default)",
                "SIGTERM to SIGKILL when Batch stops a container",
            ),
            Timeout(
                "stop_grace",
                PEER_STOP_GRACE,
                "timeout",
                "CDK_NEURON_STOP_GRACE (peer_watch.py)",
                "the launcher's SIGTERM to SIGKILL for the training processes",
            ),
        ),
        nesting=(
            Nesting(
                "job_attempt",
                "peer_join",
                "within",
                why="a child that never comes ends the attempt, not the job timeout",
            ),
            Nesting(
                "job_attempt",
                "torch_process_group",
                "within",
                why="a stuck collective ends the attempt first",
            ),
            Nesting(
                "peer_join", "topology_wait", "within", why="the join budget covers a child's topology wait"
            ),
            Nesting(
                "job_attempt",
                "infrastructure_update",
                "within",
                why="a deploy that versions the nodes ends a long attempt first: checkpoint more often "
                "than this, or deploy between jobs",
            ),
            Nesting(
                "torch_rendezvous",
                "peer_silence",
                "within",
                why="a lost peer is found before torch's own waits",
            ),
            Nesting(
                "torch_process_group",
                "peer_silence",
                "within",
                why="a lost peer is found before torch's own waits",
            ),
            Nesting(
                "peer_silence",
                "peer_heartbeat",
                "within",
                margin=2 * PEER_HEARTBEAT_INTERVAL,
                why="three beats per silence",
            ),
            Nesting(
                "ecs_stop",
                "stop_grace",
                "within",
                margin=5,
                why="the launcher's cleanup ends before ECS kills it",
            ),
        ),
    )


def peer_settings(image_gib: float = TRAINING_IMAGE_GIB) -> dict[str, str]:
    """The launcher's timing settings (job definition environment / node profile)."""
    return {
        "CDK_NEURON_PEER_JOIN_TIMEOUT": str(peer_join_seconds(image_gib)),
        "CDK_NEURON_PEER_INTERVAL": str(PEER_HEARTBEAT_INTERVAL),
        "CDK_NEURON_PEER_SILENCE": str(PEER_SILENCE),
        "CDK_NEURON_STOP_GRACE": str(PEER_STOP_GRACE),
    }


# ------------------------------------------------------------------------------------------------
# Compiling for Inferentia2: the ModelCompilation task (fetch, export, upload)
# ------------------------------------------------------------------------------------------------

S3_TRANSFER_MIB_PER_SECOND = 100
"""Assumed: what one Fargate task moves to or from S3 with the AWS CLI's default 10 concurrent
requests (``aws s3 sync``/``cp``), and what a Hub download reaches. Not measured here."""
COMPILE_DISK_MIB_PER_SECOND = 150
"""Assumed: the Fargate task's ephemeral storage for the local passes (conversion, hashing)."""
LLM_COMPILE_SECONDS = 2 * 3600
"""Assumed: ``optimum-cli export neuron`` of an LLM at the largest size a Fargate task takes. The
exporter's guide says only that LLM exports "can take much longer than standard models (sometimes
more than one hour)" (huggingface/optimum-neuron docs/source/guides/export_model.mdx @v0.4.5)."""
COMPILE_IMAGE_GIB = 25
"""Assumed: the serving image (vLLM, torch-neuronx, neuronx-cc) as pulled, compressed. Fargate counts
it against the task's ephemeral storage too (see :func:`cdk_neuron.compilation.job.disk_budget_gib`)."""
COMPILE_KILL_AFTER = 30
"""``timeout --kill-after``: SIGTERM to SIGKILL for a step that ran out of time (GNU coreutils
``timeout`` signals the step's whole process group)."""
COMPILE_STEP_FLOOR = 300
"""The least time any compile step gets, whatever the source's size: interpreter and CLI start-up, S3
request latency and the CLI's retries on throttling (standard mode: up to 3 attempts with backoff)."""
TIMED_OUT_EXIT_CODE = 124
"""The exit status GNU ``timeout`` gives a step it stopped: ``cdk-neuron compile --wait`` reports a
container that exited with it as timed out."""


def _transfer_seconds(gib: float, mib_per_second: float) -> float:
    return gib * 1024 / mib_per_second


def compile_step_seconds(source_gib: float) -> dict[str, int]:
    """Each step's timeout for a source of ``source_gib`` (``fetch``, ``export``, ``upload``).

    ``fetch`` copies an S3 source; ``export`` downloads a Hub source, converts a training
    checkpoint (read, then write the full state), hashes the source, compiles, and hashes its
    output; ``upload`` writes the export (about the weights' size: the pre-sharded copy). Each is
    :data:`SAFETY` x its work at the assumed rates above, and at least :data:`COMPILE_STEP_FLOOR`.
    """
    s3 = _transfer_seconds(source_gib, S3_TRANSFER_MIB_PER_SECOND)
    disk = _transfer_seconds(source_gib, COMPILE_DISK_MIB_PER_SECOND)
    work = {"fetch": s3, "export": s3 + 2 * disk + disk + LLM_COMPILE_SECONDS + disk, "upload": s3}
    return {step: max(COMPILE_STEP_FLOOR, math.ceil(SAFETY * seconds)) for step, seconds in work.items()}


def compile_task_seconds(source_gib: float) -> int:
    """The whole task: both image pulls, every step to its timeout and kill, one ECS stop. The
    deadline ``cdk-neuron compile --wait`` gives a task before it reports it as lost."""
    steps = compile_step_seconds(source_gib)
    pulls = image_pull_seconds(COMPILE_IMAGE_GIB) + image_pull_seconds(1)
    return pulls + sum(steps.values()) + len(steps) * COMPILE_KILL_AFTER + ECS_CONTAINER_STOP_TIMEOUT


def compile_job_seconds(source_gib: float) -> int:
    """A BatchModelCompilation job (:mod:`cdk_neuron.compilation.batch`): both images pulled (the serving
    image and the training DLC that runs fetch and upload, each assumed :data:`COMPILE_IMAGE_GIB`), every
    step to its timeout and kill, one ECS stop. The job definition's ``attemptDurationSeconds`` (Batch
    stops an attempt that runs longer) and the deadline ``cdk-neuron compile --wait`` gives it once it runs."""
    steps = compile_step_seconds(source_gib)
    pulls = 2 * image_pull_seconds(COMPILE_IMAGE_GIB)
    return pulls + sum(steps.values()) + len(steps) * COMPILE_KILL_AFTER + ECS_CONTAINER_STOP_TIMEOUT


def compile_chain(source_gib: float) -> Chain:
    """A ModelCompilation task for a source of ``source_gib`` (the task definition uses the largest
    source a Fargate task takes: ``cdk_neuron.compilation.job.FARGATE_MAX_WEIGHTS_GIB``)."""
    steps = compile_step_seconds(source_gib)
    rates = f"S3 {S3_TRANSFER_MIB_PER_SECOND} MiB/s, disk {COMPILE_DISK_MIB_PER_SECOND} MiB/s (assumed)"
    return Chain(
        name="Compiling: a ModelCompilation task",
        path="cdk-neuron compile --wait -> Fargate task -> fetch -> export -> upload",
        timeouts=(
            Timeout(
                "compile_task",
                compile_task_seconds(source_gib),
                "budget",
                "cdk-neuron compile --wait (DescribeTasks until STOPPED)",
                f"pull of {COMPILE_IMAGE_GIB} GiB at {IMAGE_PULL_MIB_PER_SECOND} MiB/s + every step's timeout "
                f"and kill + ECS stop",
            ),
            Timeout(
                "compile_fetch",
                steps["fetch"],
                "timeout",
                "fetch container entryPoint `timeout` (compile/fetch.sh)",
                f"{SAFETY} x {source_gib:g} GiB from S3 at {rates}",
            ),
            Timeout(
                "compile_export",
                steps["export"],
                "timeout",
                "export container entryPoint `timeout` (compile/export.sh)",
                f"{SAFETY} x (Hub download, conversion, hashing of {source_gib:g} GiB at {rates} + "
                f"{LLM_COMPILE_SECONDS} s of compiling, assumed)",
            ),
            Timeout(
                "compile_upload",
                steps["upload"],
                "timeout",
                "upload container entryPoint `timeout` (compile/upload.sh)",
                f"{SAFETY} x {source_gib:g} GiB to S3 at {rates}",
            ),
            Timeout(
                "compile_kill_after",
                COMPILE_KILL_AFTER,
                "timeout",
                "`timeout --kill-after` of each step",
                "SIGTERM to SIGKILL for a step's process group once its time is up",
            ),
        ),
        nesting=(
            *(
                Nesting(
                    "compile_task",
                    f"compile_{step}",
                    "within",
                    margin=COMPILE_KILL_AFTER,
                    why="a step ends (and the next reports it) before the CLI stops waiting",
                )
                for step in ("fetch", "export", "upload")
            ),
            Nesting(
                "compile_fetch",
                "compile_kill_after",
                "within",
                why="a step's kill grace is short beside the step",
            ),
        ),
    )


# ------------------------------------------------------------------------------------------------
# HyperPod: a cdk-neuron job command run on the Slurm controller through a Session Manager session
# ------------------------------------------------------------------------------------------------

HYPERPOD_SLURM_COMMAND_TIMEOUT = 60
"""jobs.sh runs each Slurm command (sbatch, scontrol, sacct, squeue, scancel) under ``timeout``.
Slurm's own client gives up on slurmctld after ``MessageTimeout`` (10 s by default) and retries;
a minute covers a busy controller without leaving the CLI hanging."""
HYPERPOD_SESSION_START = 30
"""What a non-interactive session needs to start: the StartSession call, the plugin's websocket and
the agent's shell (the plugin's own handshake retries take seconds)."""
HYPERPOD_LOG_CHUNK_SECONDS = 30
"""Reading and streaming one chunk of a job's log (jobs.sh LOG_CHUNK bytes) through the session."""
HYPERPOD_SESSION_TIMEOUT = (
    HYPERPOD_SESSION_START + 2 * HYPERPOD_SLURM_COMMAND_TIMEOUT + HYPERPOD_LOG_CHUNK_SECONDS
)
"""The CLI ends the session-manager-plugin after this long: a session runs at most two Slurm
commands (``logs``: scontrol, then sacct when scontrol has forgotten the job) and one log chunk."""


HYPERPOD_SCALE_POLL = 30
"""``cdk-neuron scale --wait`` reads DescribeCluster this often: nodes take minutes to start."""
HYPERPOD_SCALE_WAIT = 3 * 3600
"""``cdk-neuron scale --wait`` gives up after this long: launching and deep-health-checking many
Trainium nodes can take more than an hour."""


def hyperpod_command_chain() -> Chain:
    """One cdk-neuron job command (submit, status, logs, cancel, terminate, list) on HyperPod."""
    return Chain(
        name="HyperPod: a job command on the controller",
        path="cdk-neuron -> ssm:StartSession -> session-manager-plugin -> SSM agent (sh -c) -> jobs.sh -> Slurm",
        timeouts=(
            Timeout(
                "session",
                HYPERPOD_SESSION_TIMEOUT,
                "timeout",
                "cdk-neuron: the session-manager-plugin subprocess (cli/hyperpod.py)",
                f"start {HYPERPOD_SESSION_START} s + 2 Slurm commands + one log chunk "
                f"{HYPERPOD_LOG_CHUNK_SECONDS} s",
            ),
            Timeout(
                "slurm_command",
                HYPERPOD_SLURM_COMMAND_TIMEOUT,
                "timeout",
                "jobs.sh: timeout(1) around each Slurm command (CDK_NEURON_SLURM_TIMEOUT)",
                "Slurm's MessageTimeout is 10 s by default, with retries",
            ),
        ),
        nesting=(
            Nesting(
                "session",
                "slurm_command",
                "within",
                margin=HYPERPOD_SESSION_START + HYPERPOD_SLURM_COMMAND_TIMEOUT,
                why="a session may run two Slurm commands after it starts; one that hangs is ended on the "
                "controller, and reported, before the CLI gives up on the session",
            ),
        ),
    )


def chains(
    *,
    ec2_startup_seconds: int,
    ec2_boot_seconds: int,
    sagemaker_download_seconds: int,
    sagemaker_startup_seconds: int,
    compile_source_gib: float | None = None,
) -> tuple[Chain, ...]:
    """Every chain, with one model's start-up budgets (each fleet computes its own with
    :mod:`cdk_neuron.serving.timing`; ``tools/timeouts_doc.py`` documents an example model's), and
    the compile task's for a source of ``compile_source_gib`` (None: no compile chain)."""
    compiling = () if compile_source_gib is None else (compile_chain(compile_source_gib),)
    return (
        serving_request_chain(),
        serving_health_chain(),
        serving_startup_chain(ec2_startup_seconds, ec2_boot_seconds),
        sagemaker_chain(sagemaker_download_seconds, sagemaker_startup_seconds),
        training_job_chain(),
        hyperpod_command_chain(),
        *compiling,
    )


__all__ = [
    "ALB_IDLE_TIMEOUT",
    "CLIENT_READ_TIMEOUT",
    "COMPILE_KILL_AFTER",
    "DEREGISTRATION_DELAY",
    "HEALTH_CHECK_GRACE",
    "HYPERPOD_SCALE_POLL",
    "HYPERPOD_SCALE_WAIT",
    "HYPERPOD_SESSION_TIMEOUT",
    "HYPERPOD_SLURM_COMMAND_TIMEOUT",
    "JOB_ATTEMPT_TIMEOUT",
    "LIFECYCLE_HEARTBEAT_MAX",
    "LIFECYCLE_PROGRESS_WINDOW",
    "PEER_LOST_EXIT_CODE",
    "POOL_RETURN_HEARTBEAT",
    "SAGEMAKER_CLIENT_READ_TIMEOUT",
    "STARTUP_MAX",
    "TIMED_OUT_EXIT_CODE",
    "Chain",
    "Nesting",
    "Timeout",
    "chains",
    "compile_chain",
    "compile_step_seconds",
    "compile_task_seconds",
    "creation_policy_seconds",
    "hook_heartbeat_seconds",
    "hyperpod_command_chain",
    "lifecycle_global_seconds",
    "peer_join_seconds",
    "peer_settings",
    "ready_deadline_seconds",
    "sagemaker_chain",
    "serving_health_chain",
    "serving_node_settings",
    "serving_request_chain",
    "serving_startup_chain",
    "training_job_chain",
]
