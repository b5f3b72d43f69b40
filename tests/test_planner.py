"""plan_training and size_model: hand-worked examples, every refusal, and property tests.

Hand-worked numbers are transcribed by hand from public sources, never read from
``cdk_neuron.catalog``: neuronx-distributed's parallel_state.py (NXD-PS in
``cdk_neuron.catalog.SOURCES``: rank order ``[PP, DP, TP]``, the trn2 TP table); the NxD Training
(NXDT) reference configurations (aws-neuron/neuronx-distributed-training examples/conf/, e.g.
hf_llama3_70B_config.yaml @143f4fe, hf_llama3_70B_trn2_config.yaml @1a8ba56) and the Llama-3 70B
run of awsome-distributed-training (ADT: awslabs/awsome-distributed-training
3.test_cases/pytorch/neuronx-distributed/llama3/slurm/README.md @6abac09); TGI-DOC (16 GiB per
NeuronCore); and the reference deployments of the LMI transformers-neuronx tuning guide
(deepjavalibrary/djl-serving serving/docs/lmi/tuning_guides/tnx_tuning_guide.md @0827345). The
property tests check accepted plans against an independent oracle that enumerates rank groups and
their NeuronLink domains.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from cdk_neuron import planner
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import (
    FABRIC_EFA,
    FABRIC_INSTANCE,
    FABRIC_ULTRASERVER,
    ServingPlan,
    TrainingPlan,
    kv_cache_bytes,
    kv_heads_per_core,
    plan_training,
    size_model,
)

GIB = 2**30
FAST = settings(max_examples=150, deadline=None)

# --------------------------------------------------------------------------------------------
# Training: hand-worked plans
# --------------------------------------------------------------------------------------------


def test_llama3_70b_on_16_trn1_nodes() -> None:
    # NXDT hf_llama3_70B_config / ADT: 16 x trn1.32xlarge, TP 32, PP 8 -> DP 2.
    plan = plan_training("trn1.32xlarge", 16, 32, 8)
    assert (plan.world_size, plan.ranks_per_node, plan.data_parallel) == (512, 32, 2)
    assert plan.tp_within_neuronlink
    # Each PP stage spans DP x TP = 64 ranks = 2 nodes: both pipeline and data cross EFA.
    assert plan.efa_dimensions == ("pipeline", "data")
    assert plan.logical_nc_config is None
    assert "pipeline" in plan.efa_traffic and "data-parallel" in plan.efa_traffic


def test_two_trn1_nodes_full_tp_only_data_crosses() -> None:
    plan = plan_training("trn1.32xlarge", 2, 32)
    assert (plan.world_size, plan.data_parallel, plan.pipeline_parallel) == (64, 2, 1)
    assert plan.tp_within_neuronlink
    assert plan.efa_dimensions == ("data",)


def test_data_parallel_stays_inside_a_node_when_a_stage_fits_one() -> None:
    # world 64, TP 8, PP 2 -> DP 4; stage 0 = ranks 0-31 = node 0, so DP groups never leave a node.
    plan = plan_training("trn1.32xlarge", 2, 8, 2)
    assert plan.data_parallel == 4
    assert plan.efa_dimensions == ("pipeline",)


def test_trn2u_tp_within_one_instance_plans_each_node_as_its_own_domain() -> None:
    # Four trn2u.48xlarge form a Trn2 UltraServer, but without UltraServer capacity nothing guarantees
    # a job's nodes share one: two nodes share no NeuronLink domain, so DP between them is EFA traffic.
    plan = plan_training("trn2u.48xlarge", 2, 64)
    assert (plan.ranks_per_node, plan.world_size, plan.data_parallel) == (64, 128, 2)
    assert plan.neuronlink_domain_instances == 1
    assert plan.neuronlink_domain_cores == 64
    assert plan.tp_within_neuronlink
    assert plan.efa_dimensions == ("data",)
    assert plan.fabrics == {"tensor": FABRIC_INSTANCE, "data": FABRIC_EFA}
    assert any("without UltraServer capacity" in note for note in plan.notes)
    # One node alone is one domain.
    assert plan_training("trn2u.48xlarge", 1, 64).efa_dimensions == ()


@pytest.mark.parametrize(
    ("nodes", "tp", "pp"), [(8, 128, 2), (4, 256, 1), (8, 256, 1), (2, 128, 1), (4, 65, 1)]
)
def test_trn2u_tp_across_instances_needs_ultraserver_capacity(nodes: int, tp: int, pp: int) -> None:
    with pytest.raises(
        NeuronConfigError,
        match=rf"^tensor_parallel={tp}: TP {tp} spans \d trn2u\.48xlarge instances\. 4 of them form a Trn2 "
        r"UltraServer over NeuronLink-v3, but only UltraServer capacity guarantees .*ultraserver_capacity=True",
    ):
        plan_training("trn2u.48xlarge", nodes, tp, pp, allow_unlisted_tp=True)


def test_trn2u_tp_across_an_ultraserver_with_ultraserver_capacity() -> None:
    plan = plan_training("trn2u.48xlarge", 8, 256, ultraserver_capacity=True, allow_unlisted_tp=True)
    assert plan.neuronlink_domain_instances == 4
    assert plan.domain_group_instances == 4
    assert plan.tp_within_neuronlink
    assert plan.fabrics == {"tensor": FABRIC_ULTRASERVER, "data": FABRIC_EFA}
    assert plan.efa_dimensions == ("data",)
    # Inside one UltraServer, DP stays on NeuronLink too.
    one = plan_training("trn2u.48xlarge", 4, 128, ultraserver_capacity=True, allow_unlisted_tp=True)
    assert one.fabrics == {"tensor": FABRIC_ULTRASERVER, "data": FABRIC_ULTRASERVER}
    assert one.efa_dimensions == ()


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        # TP larger than an UltraServer (4 x 64 ranks at LNC=2).
        (
            ("trn2u.48xlarge", 8, 512),
            {},
            r"^tensor_parallel=512: TP 512 exceeds the 256 NeuronCores of one Trn2 UltraServer",
        ),
        # TP 192 divides 768 but not 256: groups would straddle UltraServers.
        (
            ("trn2u.48xlarge", 12, 192),
            {},
            r"^tensor_parallel=192: TP 192 groups would straddle trn2u\.48xlarge UltraServers",
        ),
        # An expert-parallel group wider than a Trn3 Gen1 UltraServer (4 x 64 ranks at LNC=2).
        (
            ("trn3.48xlarge", 8, 64),
            {"logical_nc_config": 2, "expert_parallel": 8},
            r"^expert_parallel=8: TP x EP = 512 exceeds the 256 NeuronCores of one Trn3 Gen1 UltraServer",
        ),
        # UltraServer capacity on a type that is no UltraServer server.
        (
            ("trn2.48xlarge", 4, 64),
            {},
            r"^ultraserver_capacity=True: trn2\.48xlarge is not a server of an UltraServer",
        ),
    ],
)
def test_ultraserver_refusals(args: tuple[Any, ...], kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(NeuronConfigError, match=message):
        plan_training(*args, ultraserver_capacity=True, allow_unlisted_tp=True, **kwargs)


def test_trn3_needs_an_explicit_lnc() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^logical_nc_config=None: the default logical NeuronCore config of trn3"
    ):
        plan_training("trn3.48xlarge", 1, 8)


def test_trn3_gen1_tp_inside_a_server_and_across_an_ultraserver() -> None:
    # Gen1: 4 servers x 16 Trainium3 x 8 NeuronCore-v4; 64 ranks per server at LNC=2, 256 per UltraServer.
    plan = plan_training("trn3.48xlarge", 8, 8, logical_nc_config=2)
    assert (plan.ranks_per_node, plan.world_size, plan.data_parallel) == (64, 512, 64)
    assert plan.fabrics == {"tensor": FABRIC_INSTANCE, "data": FABRIC_EFA}
    wide = plan_training(
        "trn3.48xlarge", 8, 256, 2, logical_nc_config=2, ultraserver_capacity=True, allow_unlisted_tp=True
    )
    assert wide.fabrics == {"tensor": FABRIC_ULTRASERVER, "pipeline": FABRIC_EFA}
    assert wide.efa_dimensions == ("pipeline",)
    with pytest.raises(
        NeuronConfigError,
        match=r"^tensor_parallel=128: TP 128 spans 2 trn3\.48xlarge .*Trn3 Gen1 UltraServer",
    ):
        plan_training("trn3.48xlarge", 8, 128, logical_nc_config=2, allow_unlisted_tp=True)


def test_trn3_gen2_expert_parallel_fits_one_ultraserver() -> None:
    # Gen2: 36 servers x 4 Trainium3; 16 ranks per server at LNC=2, 576 per UltraServer.
    plan = plan_training(
        "trn3-gen2-server", 72, 8, 2, logical_nc_config=2, expert_parallel=72, ultraserver_capacity=True
    )
    assert (plan.ranks_per_node, plan.world_size, plan.data_parallel) == (16, 1152, 72)
    assert plan.fabrics == {
        "tensor": FABRIC_INSTANCE, "expert": FABRIC_ULTRASERVER, "data": FABRIC_ULTRASERVER, "pipeline": FABRIC_EFA,
    }  # fmt: skip
    assert plan.domain_group_instances == 36
    # EP 144 x TP 8 = 1,152 ranks: two UltraServers' worth, refused whatever the capacity.
    with pytest.raises(
        NeuronConfigError, match=r"^expert_parallel=144: TP x EP = 1152 exceeds the 576 NeuronCores"
    ):
        plan_training(
            "trn3-gen2-server", 72, 8, 1, logical_nc_config=2, expert_parallel=144, ultraserver_capacity=True
        )
    # Without UltraServer capacity, an EP group across servers is refused.
    with pytest.raises(
        NeuronConfigError,
        match=r"^expert_parallel=4: TP x EP = 32 spans 2 trn3-gen2-server .*ultraserver_capacity=True",
    ):
        plan_training("trn3-gen2-server", 4, 8, logical_nc_config=2, expert_parallel=4)
    # EP must divide DP.
    with pytest.raises(NeuronConfigError, match=r"^expert_parallel=3: .*DP 8 is not divisible by EP 3"):
        plan_training("trn3-gen2-server", 4, 8, logical_nc_config=2, expert_parallel=3)


@pytest.mark.parametrize(
    ("instance", "nodes", "tp", "lnc", "fabrics"),
    [
        ("trn1.32xlarge", 4, 32, None, {"tensor": FABRIC_INSTANCE, "data": FABRIC_EFA}),
        ("trn1n.32xlarge", 2, 8, None, {"tensor": FABRIC_INSTANCE, "data": FABRIC_EFA}),
        ("trn2.48xlarge", 2, 64, None, {"tensor": FABRIC_INSTANCE, "data": FABRIC_EFA}),
        ("trn2.48xlarge", 1, 4, 1, {"tensor": FABRIC_INSTANCE, "data": FABRIC_INSTANCE}),
    ],
)
def test_group_fabrics_for_single_instance_domains(
    instance: str, nodes: int, tp: int, lnc: int | None, fabrics: dict[str, str]
) -> None:
    assert plan_training(instance, nodes, tp, logical_nc_config=lnc).fabrics == fabrics


def test_trn2u_tp_exactly_one_instance_at_lnc1() -> None:
    # Boundary: TP 128 is exactly one trn2u.48xlarge at LNC=1 (128 cores): accepted.
    plan = plan_training("trn2u.48xlarge", 1, 128, logical_nc_config=1)
    assert (plan.ranks_per_node, plan.tp_within_neuronlink) == (128, True)


def test_trn2_llama3_70b_reference() -> None:
    # NXDT hf_llama3_70B_trn2_config: 8 x trn2.48xlarge, 64 devices/node at LNC 2, TP 32, PP 4.
    plan = plan_training("trn2.48xlarge", 8, 32, 4)
    assert (plan.ranks_per_node, plan.world_size, plan.data_parallel) == (64, 512, 4)
    assert plan.efa_dimensions == ("pipeline", "data")
    assert any("Logic2" in note for note in plan.notes)


def test_trn2_lnc1_doubles_ranks() -> None:
    plan = plan_training("trn2.48xlarge", 1, 32, logical_nc_config=1)
    assert (plan.ranks_per_node, plan.world_size, plan.data_parallel) == (128, 128, 4)
    assert plan.logical_nc_config == 1


def test_single_trn1_2xlarge() -> None:
    plan = plan_training("trn1.2xlarge", 1, 2)
    assert (plan.world_size, plan.data_parallel, plan.efa_dimensions) == (2, 1, ())


def test_tp_that_straddles_instances_is_refused_by_default() -> None:
    # TP 12 does not divide 32 cores: some TP groups would span two trn1 nodes and use EFA.
    with pytest.raises(
        NeuronConfigError,
        match=r"^tensor_parallel=12: TP 12 is not a documented TP degree on trn1\.32xlarge \(its groups would "
        r"straddle trn1\.32xlarge instances.*use one of 1, 2, 4, 8, 32 .*allow_unlisted_tp=True",
    ):
        plan_training("trn1.32xlarge", 3, 12)


def test_straddling_tp_is_reported_when_explicitly_allowed() -> None:
    plan = plan_training("trn1.32xlarge", 3, 12, allow_unlisted_tp=True)
    assert plan.data_parallel == 8
    assert plan.allow_unlisted_tp
    assert not plan.tp_within_neuronlink
    assert "tensor" in plan.efa_dimensions
    assert "CROSSES" in plan.summary()
    assert any("straddle" in note for note in plan.notes)


# Valid training TP degrees, transcribed by hand: trn1 2, 8, 32 (Neuron LLM inference app note:
# "the Neuron runtime supports tensor-parallelism degrees 2, 8, and 32 on Trn1"), 4 (runtime 2.23
# release notes: 4-rank replica groups on adjacent cores on TRN1/TRN1N); trn2 from neuronx-distributed
# get_logic_chosen: LNC=1 128, 64, 32, 8, 4 work, LNC=2 64, 32, 16, 4 work; TP 1 forms no group.
VALID_TP: dict[tuple[str, int | None], set[int]] = {
    ("trn1.2xlarge", None): {1, 2},
    ("trn1.32xlarge", None): {1, 2, 4, 8, 32},
    ("trn1n.32xlarge", None): {1, 2, 4, 8, 32},
    ("trn2.48xlarge", 1): {1, 4, 8, 32, 64, 128},
    ("trn2.48xlarge", 2): {1, 4, 16, 32, 64},
    ("trn2u.48xlarge", 1): {1, 4, 8, 32, 64, 128},
    ("trn2u.48xlarge", 2): {1, 4, 16, 32, 64},
}


@pytest.mark.parametrize(("instance", "lnc"), sorted(VALID_TP, key=str))
def test_documented_tp_degrees_are_exactly_the_accepted_ones(instance: str, lnc: int | None) -> None:
    accepted = set()
    for tp in range(1, 129):
        try:
            plan_training(instance, 1, tp, logical_nc_config=lnc)
        except NeuronConfigError:
            continue
        accepted.add(tp)
    assert accepted == VALID_TP[(instance, lnc)]


def test_unlisted_but_not_broken_degrees_need_the_opt_in() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^tensor_parallel=16: .*\(no training source documents it\)"
    ):
        plan_training("trn1.32xlarge", 1, 16)
    plan = plan_training("trn1.32xlarge", 1, 16, allow_unlisted_tp=True)
    assert plan.tp_within_neuronlink and plan.efa_dimensions == ()
    assert any("not a documented degree" in note for note in plan.notes)
    # Degrees a source says are broken stay refused.
    with pytest.raises(NeuronConfigError, match=r"^tensor_parallel=8: neuronx-distributed does not support"):
        plan_training("trn2.48xlarge", 1, 8, allow_unlisted_tp=True)
    with pytest.raises(NeuronConfigError, match=r"^allow_unlisted_tp='yes':"):
        plan_training("trn1.32xlarge", 1, 16, allow_unlisted_tp="yes")  # type: ignore[arg-type]


def test_trn1_tp4_note() -> None:
    assert any("LOCAL_WORLD_SIZE" in n for n in plan_training("trn1.32xlarge", 1, 4).notes)


def test_summary_is_one_line() -> None:
    summary = plan_training("trn1.32xlarge", 16, 32, 8).summary()
    assert "\n" not in summary
    assert "TP 32 x PP 8 x DP 2" in summary


# --------------------------------------------------------------------------------------------
# Training: refusals
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "pattern"),
    [
        # TP larger than one NeuronLink domain's cores.
        (("trn1.32xlarge", 2, 64), {}, r"^tensor_parallel=64: exceeds the 32 NeuronCores"),
        (("trn1.32xlarge", 2, 33), {"allow_unlisted_tp": True}, r"^tensor_parallel=33: exceeds the 32"),
        (("trn2.48xlarge", 2, 128), {}, r"^tensor_parallel=128: exceeds the 64 NeuronCores.*LNC=2"),
        (("trn2.48xlarge", 2, 256), {"logical_nc_config": 1}, r"^tensor_parallel=256: exceeds the 128"),
        (("trn2u.48xlarge", 8, 512), {}, r"^tensor_parallel=512: TP 512 spans 8 trn2u.48xlarge instances"),
        # Unlisted degrees (trn2 TP 2, trn1 TP 6) without the opt-in.
        (("trn2.48xlarge", 1, 2), {}, r"^tensor_parallel=2: TP 2 is not a documented TP degree on trn2"),
        (("trn1.32xlarge", 1, 6), {}, r"^tensor_parallel=6: TP 6 is not a documented .*straddle"),
        # World size not divisible by TP x PP: name the degree that breaks it.
        (("trn1.32xlarge", 1, 8, 3), {}, r"^pipeline_parallel=3: world size 32 .* TP x PP = 8 x 3"),
        (("trn1.32xlarge", 1, 3), {"allow_unlisted_tp": True}, r"^tensor_parallel=3: world size 32"),
        (("trn1.32xlarge", 16, 32, 3), {}, r"^pipeline_parallel=3: world size 512"),
        # Multi-node without EFA.
        (("trn1.2xlarge", 2, 2), {}, r"^nodes=2: trn1.2xlarge has no EFA.*trn1.32xlarge"),
        # Inference instances and unknown ones.
        (("inf2.48xlarge", 1, 8), {}, r"^instance_type='inf2.48xlarge': .*Inferentia2"),
        (("trn9.48xlarge", 1, 8), {}, r"^instance_type='trn9.48xlarge': not a Neuron instance type"),
        # trn2 TP degrees neuronx-distributed does not support (NXD-PS get_logic_chosen).
        (("trn2.48xlarge", 1, 8), {}, r"^tensor_parallel=8: .*LNC=2.*or LNC=1"),
        (("trn2.48xlarge", 1, 8), {"logical_nc_config": 2}, r"^tensor_parallel=8: .*LNC=2"),
        (("trn2.48xlarge", 1, 16), {"logical_nc_config": 1}, r"^tensor_parallel=16: .*LNC=1.*or LNC=2"),
        (("trn2u.48xlarge", 4, 8), {}, r"^tensor_parallel=8: .*LNC=2"),
        # nodes < 1 and other non-positive degrees.
        (("trn1.32xlarge", 0, 32), {}, r"^nodes=0: must be a whole number >= 1"),
        (("trn1.32xlarge", -3, 32), {}, r"^nodes=-3:"),
        (("trn1.32xlarge", 1.5, 32), {}, r"^nodes=1.5:"),
        (("trn1.32xlarge", True, 32), {}, r"^nodes=True:"),
        (("trn1.32xlarge", 1, 0), {}, r"^tensor_parallel=0:"),
        (("trn1.32xlarge", 1, 8, 0), {}, r"^pipeline_parallel=0:"),
        # LNC only on trn2, and only 1 or 2.
        (
            ("trn1.32xlarge", 1, 8),
            {"logical_nc_config": 1},
            r"^logical_nc_config=1: LNC applies only to Trn2",
        ),
        (
            ("trn2.48xlarge", 1, 4),
            {"logical_nc_config": 3},
            r"^logical_nc_config=3: valid values are 1 and 2",
        ),
        (("trn2.48xlarge", 1, 4), {"logical_nc_config": True}, r"^logical_nc_config=True:"),
        (("trn2.48xlarge", 1, 4), {"logical_nc_config": 2.0}, r"^logical_nc_config=2.0:"),
        # TP across trn2u instances: Batch does not place nodes by UltraServer.
        (("trn2u.48xlarge", 2, 128), {}, r"^tensor_parallel=128: .*UltraServer"),
        (("trn2u.48xlarge", 6, 128), {}, r"^tensor_parallel=128: .*UltraServer"),
        (("trn2u.48xlarge", 2, 256), {}, r"^tensor_parallel=256: .*UltraServer"),
    ],
)
def test_plan_training_refusals(args: tuple[Any, ...], kwargs: dict[str, Any], pattern: str) -> None:
    with pytest.raises(NeuronConfigError, match=pattern):
        plan_training(*args, **kwargs)


# --------------------------------------------------------------------------------------------
# Training: properties against an oracle
# --------------------------------------------------------------------------------------------

TRAINING_ARGS = (
    "instance_type",
    "nodes",
    "tensor_parallel",
    "pipeline_parallel",
    "logical_nc_config",
    "allow_unlisted_tp",
)
# Physical cores, default LNC and the instances *guaranteed* to share one NeuronLink domain,
# transcribed from TRN1-ARCH, TRN2-ARCH and LNC (EFA from MOTO). trn2u.48xlarge is 1: four form an
# UltraServer, but AWS Batch does not place a job's nodes by UltraServer.
TRAINING_FACTS: dict[str, tuple[int, int | None, int, bool]] = {
    # name: (physical cores, default LNC, guaranteed instances per NeuronLink domain, has EFA)
    "trn1.2xlarge": (2, None, 1, False),
    "trn1.32xlarge": (32, None, 1, True),
    "trn1n.32xlarge": (32, None, 1, True),
    "trn2.48xlarge": (128, 2, 1, True),
    "trn2u.48xlarge": (128, 2, 1, True),
}
UNSUPPORTED_TRN2_TP = {1: 16, 2: 8}


def _oracle_crossings(plan: TrainingPlan, domain_instances: int) -> tuple[bool, set[str]]:
    """Enumerate every TP, DP and PP group and ask whether its ranks span NeuronLink domains."""
    tp, dp, pp = plan.tensor_parallel, plan.data_parallel, plan.pipeline_parallel
    rpn = plan.ranks_per_node

    def domain(rank: int) -> int:
        return (rank // rpn) // domain_instances

    def rank(p: int, d: int, t: int) -> int:  # [PP, DP, TP] row-major
        return (p * dp + d) * tp + t

    def crosses(ranks: list[int]) -> bool:
        return len({domain(r) for r in ranks}) > 1

    tensor = any(crosses([rank(p, d, t) for t in range(tp)]) for p in range(pp) for d in range(dp))
    data = any(crosses([rank(p, d, t) for d in range(dp)]) for p in range(pp) for t in range(tp))
    pipeline = any(crosses([rank(p, d, t) for p in range(pp)]) for d in range(dp) for t in range(tp))
    crossing = {name for name, yes in (("tensor", tensor), ("data", data), ("pipeline", pipeline)) if yes}
    return not tensor, crossing


@st.composite
def _training_inputs(draw: st.DrawFn) -> tuple[Any, Any, Any, Any, Any, Any]:
    """Mostly inputs a user might really give (near the edges of the rules), one in four wild."""
    if draw(st.integers(0, 3)) == 3:
        return (
            draw(st.sampled_from([*TRAINING_FACTS, "inf2.48xlarge", "p5.48xlarge", "", None])),
            draw(st.one_of(st.integers(-2, 70), st.sampled_from([1.5, True, "2"]))),
            draw(st.integers(-1, 600)),
            draw(st.integers(-1, 40)),
            draw(st.sampled_from([None, 0, 1, 2, 3, True, 2.0])),
            draw(st.sampled_from([False, True, "yes"])),
        )
    instance = draw(
        st.sampled_from(
            ["trn1.32xlarge", "trn2.48xlarge", "trn2u.48xlarge", "trn1n.32xlarge", "trn1.2xlarge"]
        )
    )
    lnc = draw(st.sampled_from([None, 2, 1])) if TRAINING_FACTS[instance][1] else None
    nodes = draw(st.sampled_from([1, 2, 4, 8, 3, 5, 6, 12, 16, 32]))
    tp = draw(st.sampled_from([32, 8, 16, 64, 128, 256, 1, 2, 4, 512, 3, 6, 12, 24]))
    pp = draw(st.sampled_from([1, 2, 4, 8, 16, 3]))
    return instance, nodes, tp, pp, lnc, draw(st.booleans())


@settings(max_examples=250, deadline=None)
@given(_training_inputs())
def test_training_plans_are_consistent_or_refused(case: tuple[Any, Any, Any, Any, Any, Any]) -> None:
    instance, nodes, tp, pp, lnc, allow = case
    try:
        plan = plan_training(instance, nodes, tp, pp, logical_nc_config=lnc, allow_unlisted_tp=allow)
    except NeuronConfigError as err:
        event(f"refused: {err.field}")
        assert err.field in TRAINING_ARGS
        assert str(err).startswith(f"{err.field}=")
        assert len(str(err)) > len(err.field) + 5
        return

    physical, default_lnc, domain_instances, has_efa = TRAINING_FACTS[instance]
    effective_lnc = default_lnc if lnc is None else lnc
    # Nothing accepted that should have been refused.
    assert nodes >= 1 and tp >= 1 and pp >= 1
    assert nodes == 1 or has_efa
    assert lnc is None or default_lnc is not None
    if default_lnc is not None:
        assert effective_lnc in (1, 2)
        assert tp != UNSUPPORTED_TRN2_TP[effective_lnc]
    # The arithmetic.
    rpn = physical // (effective_lnc or 1)
    assert plan.ranks_per_node == rpn
    assert plan.world_size == nodes * rpn
    assert plan.world_size == plan.tensor_parallel * plan.pipeline_parallel * plan.data_parallel
    assert plan.data_parallel >= 1
    assert (plan.tensor_parallel, plan.pipeline_parallel, plan.nodes) == (tp, pp, nodes)
    assert plan.logical_nc_config == effective_lnc
    # TP fits one instance (the only guaranteed NeuronLink domain) and is a documented degree,
    # unless the caller opted in to unlisted degrees.
    assert tp <= rpn
    assert tp <= plan.neuronlink_domain_cores
    if not allow:
        assert tp in VALID_TP[(instance, effective_lnc)]
        assert plan.tp_within_neuronlink
    # NeuronLink / EFA classification matches the enumerated rank groups.
    if plan.world_size <= 4096:
        tp_inside, crossing = _oracle_crossings(plan, domain_instances)
        assert plan.tp_within_neuronlink is tp_inside
        assert set(plan.efa_dimensions) == crossing
        event(f"accepted: crosses {sorted(crossing) or 'nothing'}")
        assert len(plan.efa_dimensions) == len(set(plan.efa_dimensions))
    assert isinstance(plan.summary(), str)


def test_efa_classification_matches_oracle_on_a_grid() -> None:
    """Every plan on a grid of realistic shapes, not just the ones hypothesis happens to draw."""
    checked = 0
    for instance, (_, default_lnc, domain_instances, _) in TRAINING_FACTS.items():
        for lnc in (None, 1, 2) if default_lnc else (None,):
            for nodes in (1, 2, 3, 4, 5, 8):
                for tp in (1, 2, 4, 8, 12, 16, 32, 64, 128, 256):
                    for pp in (1, 2, 3, 4):
                        try:
                            plan = plan_training(
                                instance, nodes, tp, pp, logical_nc_config=lnc, allow_unlisted_tp=True
                            )
                        except NeuronConfigError:
                            continue
                        tp_inside, crossing = _oracle_crossings(plan, domain_instances)
                        assert plan.tp_within_neuronlink is tp_inside, plan
                        assert set(plan.efa_dimensions) == crossing, plan
                        checked += 1
    assert checked > 300


# --------------------------------------------------------------------------------------------
# Serving: hand-worked sizes
# --------------------------------------------------------------------------------------------


def test_kv_cache_formula_matches_hand_computation() -> None:
    # Llama-3 8B: 32 layers, 8 KV heads, head dim 128, bf16, 4,096 tokens:
    # 2 (K and V) x 32 x 8 x 128 x 4096 x 1 x 2 bytes = 536,870,912 bytes = 0.5 GiB.
    got = kv_cache_bytes(
        layers=32, kv_heads=8, head_dim=128, sequence_length=4096, batch_size=1, bytes_per_value=2
    )
    assert got == 536_870_912
    assert size_model(8e9, layers=32, kv_heads=8).kv_cache_gib == 0.5
    # Batch and sequence scale it linearly.
    assert size_model(8e9, layers=32, kv_heads=8, batch_size=8).kv_cache_gib == 4.0
    assert size_model(8e9, layers=32, kv_heads=8, sequence_length=8192).kv_cache_gib == 1.0


def test_70b_bf16_lands_on_inf2_48xlarge_tp24() -> None:
    plan = size_model(70e9)
    assert (plan.instance_type, plan.tensor_parallel, plan.replicas_per_instance) == ("inf2.48xlarge", 24, 1)
    # 70e9 x 2 bytes = 130.39 GiB of weights; KV 1.25 GiB (80 layers, 8 KV heads of 0.15625 GiB).
    # At TP 24 each core holds one whole KV head (8 heads replicated to 24), not 1.25 / 24.
    assert plan.weights_gib == pytest.approx(130.385, abs=1e-3)
    assert plan.kv_cache_gib == 1.25
    assert plan.kv_heads_per_core == 1
    assert plan.kv_cache_per_core_gib == pytest.approx(0.15625, abs=1e-4)
    assert plan.hbm_per_core_gib == pytest.approx(130.385 / 24 + 0.15625, abs=1e-3)
    assert "1 of 8 KV head(s) per core, replicated" in plan.explanation
    assert plan.visible_cores(0) == "0-23"
    assert plan.devices(0) == tuple(f"/dev/neuron{i}" for i in range(12))
    assert plan.devices_per_replica == 12
    assert "inf2.48xlarge" in plan.explanation and "\n" not in plan.explanation


def test_8b_bf16_lands_on_inf2_xlarge_tp2_as_published_deployments_do() -> None:
    # HF-SM-LLAMA3 deploys Meta-Llama-3-8B on ml.inf2.xlarge with HF_NUM_CORES=2: the cheapest Inf2 fits.
    plan = size_model(8e9)
    assert (plan.instance_type, plan.tensor_parallel, plan.replicas_per_instance) == ("inf2.xlarge", 2, 1)
    # 14.901 GiB weights / 2 + 4 of 8 KV heads (0.0625 GiB each) = 7.70 GiB per core of 16: 52 % free.
    assert plan.weights_gib == pytest.approx(14.901, abs=1e-3)
    assert plan.hbm_per_core_gib == pytest.approx(7.701, abs=1e-3)
    assert plan.hbm_limit_per_core_gib == 16.0
    assert plan.headroom == pytest.approx(1 - 7.7006 / 16, abs=1e-3)
    assert plan.host_memory_limit_gib == 15.0  # 16 GiB less 1/16
    assert plan.host_memory_override is None
    assert plan.visible_cores(0) == "0-1"
    assert plan.devices(0) == ("/dev/neuron0",)


# Host RAM (GiB) transcribed from the Inf2 architecture page: 16, 128, 384, 768; 15/16 usable.
def test_a_model_bigger_than_inf2_xlarge_host_memory_is_refused_there() -> None:
    # Gemma-2 9B-sized, 9.24B parameters at bf16: 17.2 GiB, more than the 16 GiB host holds at all.
    with pytest.raises(
        NeuronConfigError,
        match=r"^instance_type='inf2\.xlarge': 17\.2 GiB of weights at bf16 exceed the 15\.0 GiB of host "
        r"memory usable on inf2\.xlarge \(16 GiB less 6\.25%\): loading reads the weights into host memory "
        r"\(HOST-MEM\); inf2\.8xlarge with TP 2 would fit, or give host_memory_override a reason$",
    ):
        size_model(9.24e9, instance_type="inf2.xlarge")
    # SageMaker's name for it too.
    with pytest.raises(NeuronConfigError, match=r"^instance_type='inf2\.xlarge': .*host memory"):
        size_model(9.24e9, instance_type="ml.inf2.xlarge")


def test_host_memory_limit_is_inclusive() -> None:
    # Exactly 15 GiB of bf16 weights is exactly 15/16 of inf2.xlarge's 16 GiB: accepted at TP 2 (one
    # replica); one parameter more is refused.
    at_limit = 15 * GIB // 2
    plan = size_model(at_limit, instance_type="inf2.xlarge", layers=32, kv_heads=8)
    assert (plan.weights_gib, plan.tensor_parallel, plan.host_memory_limit_gib) == (15.0, 2, 15.0)
    with pytest.raises(NeuronConfigError, match=r"^instance_type='inf2\.xlarge': 15\.0 GiB of weights"):
        size_model(at_limit + 1, instance_type="inf2.xlarge", layers=32, kv_heads=8)


def test_replicas_each_load_their_own_weights_into_host_memory() -> None:
    # Llama-3.2 3B (3.21B, bf16: 5.98 GiB): TP 1 packs 2 replicas on inf2.xlarge, 11.96 of 15 GiB.
    small = size_model(3.21e9, instance_type="inf2.xlarge")
    assert (small.tensor_parallel, small.replicas_per_instance) == (1, 2)
    # 4.1B (7.64 GiB): two replicas would load 15.3 GiB, so TP 2 (one replica) is chosen instead ...
    bigger = size_model(4.1e9, instance_type="inf2.xlarge")
    assert (bigger.tensor_parallel, bigger.replicas_per_instance) == (2, 1)
    # ... and an explicit TP 1 is refused for host memory, naming the TP that fits.
    with pytest.raises(
        NeuronConfigError,
        match=r"^tensor_parallel=1: 2 replicas of 7\.6 GiB load 15\.3 GiB into host memory.*TP 2 fits",
    ):
        size_model(4.1e9, instance_type="inf2.xlarge", tensor_parallel=1)
    # With an override both replicas load, and the plan says why the check was skipped.
    packed = size_model(
        4.1e9,
        instance_type="inf2.xlarge",
        tensor_parallel=1,
        host_memory_override="measured 7.1 GiB peak RSS each",
    )
    assert (packed.replicas_per_instance, packed.host_memory_override) == (
        2,
        "measured 7.1 GiB peak RSS each",
    )
    assert packed.explanation.endswith("(host-memory check overridden: measured 7.1 GiB peak RSS each)")


def test_host_memory_headroom_is_a_fraction() -> None:
    for bad in (1.0, -0.1, True, "25%"):
        with pytest.raises(NeuronConfigError, match=r"^host_memory_headroom="):
            size_model(8e9, host_memory_headroom=bad)  # type: ignore[arg-type]
    # With no reserve at all, 16 GiB of weights fit 16 GiB: the reserve is what refuses them.
    assert (
        size_model(16 * GIB // 2, instance_type="inf2.xlarge", host_memory_headroom=0.0).tensor_parallel == 2
    )


def test_the_host_memory_override_takes_a_reason_and_skips_only_the_host_check() -> None:
    reason = "measured: 15.6 GiB peak RSS while loading on inf2.xlarge, 2026-11-30"
    plan = size_model(9.24e9, instance_type="inf2.xlarge", host_memory_override=f"  {reason} ")
    assert (plan.instance_type, plan.tensor_parallel, plan.host_memory_override) == ("inf2.xlarge", 2, reason)
    assert plan.explanation.endswith(f"17.2 of 15 GiB usable (host-memory check overridden: {reason})")
    # Without an instance, the cheapest instance whose HBM fits is chosen, host memory aside.
    assert size_model(9.24e9, host_memory_override=reason).instance_type == "inf2.xlarge"
    # HBM is still checked.
    with pytest.raises(NeuronConfigError, match=r"^instance_type='inf2\.xlarge': model needs"):
        size_model(30e9, instance_type="inf2.xlarge", host_memory_override=reason)
    for bad in ("", "   ", 7, True):
        with pytest.raises(
            NeuronConfigError,
            match=rf"^host_memory_override={re.escape(repr(bad))}: give the reason the host-memory check does "
            r"not apply, e\.g\. 'measured: 14\.2 GiB peak RSS while loading on inf2\.xlarge, 2026-11-30'$",
        ):
            size_model(8e9, host_memory_override=bad)  # type: ignore[arg-type]


# NxD Inference GQA sharding (gqa.py get_shardable_head_counts), hand-worked:
# (kv_heads, attention_heads, TP) -> KV heads per core.
KV_HEADS_PER_CORE = [
    (8, 32, 2, 4),  # 8 KV heads split over 2 cores
    (8, 32, 8, 1),  # exactly one per core: TP == KV heads
    (8, 32, 16, 1),  # replicated: 16 is a multiple of 8 (REPLICATE_TO_TP_DEGREE)
    (8, 64, 24, 1),  # Llama-3 70B on inf2.48xlarge
    (8, 32, 12, 3),  # 12 is no multiple of 8: MHA, 32 query heads padded to 36 -> 3 per core
    (40, 40, 12, 4),  # MHA (Llama-2 13B): 40 heads padded to 48 -> 4 per core = ceil(40 / 12)
    (40, 40, 8, 5),
    (4, 32, 2, 2),
    (1, 32, 8, 1),  # MQA: one KV head, replicated to every core
]


@pytest.mark.parametrize(("kv", "q", "tp", "per_core"), KV_HEADS_PER_CORE)
def test_kv_heads_per_core_follows_nxd_inference(kv: int, q: int, tp: int, per_core: int) -> None:
    assert kv_heads_per_core(kv, q, tp) == per_core
    assert per_core >= max(1, math.ceil(kv / tp))  # never below the brief's floor


def test_kv_cache_per_core_counts_whole_replicated_heads() -> None:
    # Llama-3 8B shape, batch 16 x 4,096: per KV head 2 x 32 x 128 x 4096 x 16 x 2 B = 1 GiB; 8 GiB total.
    shape: dict[str, Any] = {"layers": 32, "kv_heads": 8, "batch_size": 16}
    at_8 = size_model(8e9, instance_type="inf2.48xlarge", tensor_parallel=8, **shape)
    assert (at_8.kv_cache_gib, at_8.kv_heads_per_core, at_8.kv_cache_per_core_gib) == (8.0, 1, 1.0)
    # TP 24: the even share would be 8 / 24 = 0.33 GiB; each core still holds one whole head.
    at_24 = size_model(8e9, instance_type="inf2.48xlarge", tensor_parallel=24, **shape)
    assert (at_24.kv_heads_per_core, at_24.kv_cache_per_core_gib) == (1, 1.0)
    assert at_24.hbm_per_core_gib == pytest.approx(8e9 * 2 / GIB / 24 + 1.0, abs=1e-3)


def test_replicated_kv_heads_can_make_a_model_not_fit() -> None:
    # MQA (1 KV head), 32 layers, 32,768 positions, bf16: one head is 2 x 32 x 128 x 32768 x 2 B
    # = 0.5 GiB per sequence, and every core holds it whole. 40 GiB of weights at TP 24 is 1.667 GiB.
    shape: dict[str, Any] = {"layers": 32, "kv_heads": 1, "sequence_length": 32768}
    params = 40 * GIB / 2
    fits = size_model(params, instance_type="inf2.48xlarge", tensor_parallel=24, batch_size=8, **shape)
    assert (fits.kv_cache_gib, fits.kv_cache_per_core_gib) == (4.0, 4.0)
    assert fits.hbm_per_core_gib == pytest.approx(40 / 24 + 4.0, abs=1e-3)
    # Batch 20: the replicated head is 10 GiB per core, 11.67 GiB with the weights, over the 10.4 usable;
    # the old even share (10 / 24 = 0.42 GiB) would have called it 2.08 GiB and accepted it.
    with pytest.raises(
        NeuronConfigError, match=r"^tensor_parallel=24: 11\.7 GiB per NeuronCore|^instance_type="
    ):
        size_model(params, instance_type="inf2.48xlarge", tensor_parallel=24, batch_size=20, **shape)


def test_8b_on_inf2_48xlarge_packs_12_replicas() -> None:
    plan = size_model(8e9, instance_type="inf2.48xlarge")
    assert (plan.tensor_parallel, plan.replicas_per_instance, plan.neuron_cores_used) == (2, 12, 24)
    for replica in range(12):
        assert plan.visible_cores(replica) == f"{2 * replica}-{2 * replica + 1}"
        assert plan.devices(replica) == (f"/dev/neuron{replica}",)
    for bad in (-1, 12):
        with pytest.raises(NeuronConfigError, match=rf"^replica={bad}: valid replicas are 0..11"):
            plan.visible_cores(bad)
        with pytest.raises(NeuronConfigError, match=rf"^replica={bad}:"):
            plan.devices(bad)


def test_single_core_replicas_name_one_core() -> None:
    plan = size_model(1e9, instance_type="inf2.24xlarge")
    assert (plan.tensor_parallel, plan.replicas_per_instance) == (1, 12)
    # Every replica, on an even core as on an odd one: core c is on chip c // 2 (2 cores per Inferentia2).
    for replica in range(12):
        assert plan.visible_cores(replica) == str(replica)
        assert plan.devices(replica) == (f"/dev/neuron{replica // 2}",)


def test_70b_on_inf2_24xlarge_is_refused_naming_48xlarge() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^instance_type='inf2.24xlarge': .*inf2\.48xlarge with TP 24 would fit"
    ):
        size_model(70e9, instance_type="inf2.24xlarge")


def test_headroom_is_what_keeps_70b_off_inf2_24xlarge() -> None:
    # 131.6 GiB / 12 cores = 11.0 GiB: inside 16 GiB, outside 16 x 0.65 = 10.4 GiB.
    assert size_model(70e9, instance_type="inf2.24xlarge", headroom=0.0).tensor_parallel == 12


def test_reference_deployments_fit() -> None:
    # djl-serving tnx_tuning_guide.md @0827345 (LMI transformers-neuronx tuning guide): Llama-2 7B
    # fp16 (MHA, 32 layers x 32 KV heads), batch 4 x 2,048.
    llama2_7b: dict[str, Any] = {
        "dtype": "fp16",
        "layers": 32,
        "kv_heads": 32,
        "sequence_length": 2048,
        "batch_size": 4,
    }
    # LMI-TNX runs it on inf2.xlarge at TP 2: its HBM fits, and its 12.6 GiB of weights load on the
    # 16 GiB host (15 usable).
    edge = size_model(6.74e9, instance_type="inf2.xlarge", **llama2_7b)
    assert (edge.tensor_parallel, edge.weights_gib) == (2, 12.554)
    on_24 = size_model(6.74e9, instance_type="inf2.24xlarge", tensor_parallel=8, **llama2_7b)
    assert (on_24.tensor_parallel, on_24.replicas_per_instance, on_24.devices_per_replica) == (8, 1, 4)
    assert on_24.devices(0) == tuple(f"/dev/neuron{i}" for i in range(4))
    # HF-SM-LLAMA3: Meta-Llama-3-8B (8,030,261,248 parameters) at batch 8 x 4,096 on ml.inf2.xlarge,
    # HF_NUM_CORES=2: its HBM fits at TP 2 and its 14.96 GiB of weights load on the 16 GiB host.
    snippet = size_model(8_030_261_248, batch_size=8, sequence_length=4096, instance_type="ml.inf2.xlarge")
    assert (snippet.instance_type, snippet.tensor_parallel, snippet.weights_gib) == ("inf2.xlarge", 2, 14.958)
    # 14.96 of 16 GiB is above 90 % of the host's RAM: the plan says the margin (1.04 GiB) holds only with
    # streaming, shard-on-load loading (review-24 nit 14); Llama-2 7B's 12.55 GiB (78 %) needs no such note.
    assert snippet.explanation.endswith(
        "host RAM for loading: 15.0 of 15 GiB usable (within 10% of the instance's 16 GiB of RAM: it holds while "
        "loading streams safetensors and shards them on load, as NxD Inference and optimum-neuron do; a .bin "
        "checkpoint, or loading without shard-on-load, can run out of host memory)"
    )
    assert edge.explanation.endswith("host RAM for loading: 12.6 of 15 GiB usable")
    # OPTN-NB: CodeLlama-7B fp16 (6.74B, MHA) precompiled for 2 cores, batch 1 x 2,048, on inf2.xlarge.
    codellama = size_model(
        6.74e9, dtype="fp16", layers=32, kv_heads=32, sequence_length=2048, instance_type="inf2.xlarge"
    )
    assert (codellama.tensor_parallel, codellama.replicas_per_instance) == (2, 1)


def test_explicit_tp_is_honoured() -> None:
    plan = size_model(8e9, instance_type="inf2.48xlarge", tensor_parallel=8)
    assert (plan.tensor_parallel, plan.replicas_per_instance) == (8, 3)
    # Without an instance: the cheapest instance that takes TP 8.
    assert size_model(8e9, tensor_parallel=8).instance_type == "inf2.24xlarge"


def test_eight_bit_weights_keep_a_16_bit_kv_cache_by_default() -> None:
    # Llama-2 13B shape (40 layers, 40 KV heads): KV = 2 x 40 x 5120 x 4096 x 2 bytes = 3.125 GiB.
    shape: dict[str, Any] = {"layers": 40, "kv_heads": 40}
    int8 = size_model(13e9, dtype="int8", **shape)
    assert int8.kv_cache_gib == 3.125
    assert int8.weights_gib == pytest.approx(13e9 / GIB, abs=1e-3)
    assert "KV cache at bf16" in int8.explanation
    # Plan fields are rounded to 3 decimals (1.5625 -> 1.562).
    assert size_model(13e9, dtype="int8", kv_cache_dtype="fp8", **shape).kv_cache_gib == pytest.approx(
        1.5625, abs=1e-3
    )
    assert size_model(13e9, dtype="bf16", **shape).kv_cache_gib == 3.125
    assert size_model(13e9, dtype="fp32", **shape).kv_cache_gib == 6.25


def test_hidden_size_alone_means_multi_head_attention() -> None:
    # 32 layers x 4096 hidden (= 32 heads x 128) x 4096 tokens x 2 bytes x 2 = 2 GiB.
    assert size_model(7e9, layers=32, hidden_size=4096).kv_cache_gib == 2.0


def test_assumed_shape_is_explained() -> None:
    assert "assumed layers=80, kv_heads=8" in size_model(70e9).explanation
    assert "assumed" not in size_model(8e9, layers=32, kv_heads=8).explanation


def test_trainium_can_be_validated_for_serving() -> None:
    # 24 GiB per LNC=2 core, 15.6 usable: 131.6 GiB / 8 = 16.4 is too much, / 16 = 8.2 fits.
    plan = size_model(70e9, instance_type="trn2.48xlarge")
    assert plan.hbm_limit_per_core_gib == 24.0
    assert (plan.tensor_parallel, plan.replicas_per_instance) == (16, 4)
    assert plan.devices(1) == tuple(f"/dev/neuron{i}" for i in range(4, 8))  # 4 logical cores per chip


# --------------------------------------------------------------------------------------------
# Serving: refusals
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"parameters": 0}, r"^parameters=0: must be a positive whole number"),
        ({"parameters": -7e9}, r"^parameters=-7000000000.0:"),
        ({"parameters": float("nan")}, r"^parameters=nan: give the model.s parameter count"),
        ({"parameters": float("inf")}, r"^parameters=inf: give the model.s parameter count"),
        ({"parameters": "7B"}, r"^parameters='7B':"),
        ({"parameters": True}, r"^parameters=True:"),
        # Weights alone exceed every Inf2 instance.
        ({"parameters": 1e12}, r"^parameters=1000000000000.0: needs .* more than any Inf2"),
        # The KV cache is what does not fit: name the input that grew it.
        ({"parameters": 8e9, "sequence_length": 10_000_000}, r"^sequence_length=10000000: .*KV cache"),
        ({"parameters": 8e9, "batch_size": 4096}, r"^batch_size=4096: .*KV cache"),
        ({"parameters": 8e9, "dtype": "fp4"}, r"^dtype='fp4': use one of .*bf16"),
        ({"parameters": 8e9, "kv_cache_dtype": "q4"}, r"^kv_cache_dtype='q4':"),
        ({"parameters": 8e9, "sequence_length": 0}, r"^sequence_length=0:"),
        ({"parameters": 8e9, "batch_size": 1.5}, r"^batch_size=1.5:"),
        ({"parameters": 8e9, "kv_heads": 0}, r"^kv_heads=0:"),
        ({"parameters": 8e9, "layers": -1}, r"^layers=-1:"),
        ({"parameters": 8e9, "hidden_size": 1.5}, r"^hidden_size=1.5:"),
        ({"parameters": 8e9, "headroom": 1.0}, r"^headroom=1.0:"),
        ({"parameters": 8e9, "headroom": -0.1}, r"^headroom=-0.1:"),
        ({"parameters": 8e9, "headroom": False}, r"^headroom=False:"),
        ({"parameters": 8e9, "instance_type": "g5.xlarge"}, r"^instance_type='g5.xlarge': not a Neuron"),
        (
            {"parameters": 8e9, "tensor_parallel": 3},
            r"^tensor_parallel=3: the Neuron runtime supports TP degrees 1, 2, 4, 8, 12, 16, 24, 32, 64 for "
            r"inference \(NXDI-TP per instance family; TP 12 on Inf2 from TP-APPNOTE; Trn3 from TRN3-TUTORIAL\)$",
        ),
        ({"parameters": 8e9, "tensor_parallel": 0}, r"^tensor_parallel=0:"),
        # An explicit TP that cannot fit anywhere, or is too large / too small for the instance.
        (
            {"parameters": 70e9, "tensor_parallel": 2},
            r"^tensor_parallel=2: .*inf2\.48xlarge with TP 24 would fit",
        ),
        (
            {"parameters": 8e9, "instance_type": "inf2.24xlarge", "tensor_parallel": 24},
            r"^tensor_parallel=24: inf2.24xlarge has 12 NeuronCores; the Neuron runtime supports TP 1, 2, 4, 8, 12 "
            r"for inference there \(NXDI-TP; TP 12 from TP-APPNOTE and OPTN-NB\)$",
        ),
        (
            {"parameters": 70e9, "instance_type": "inf2.48xlarge", "tensor_parallel": 12},
            r"^tensor_parallel=12: .*TP 24 fits there",
        ),
        (
            {"parameters": 6e9, "instance_type": "inf2.xlarge", "tensor_parallel": 1},
            r"^tensor_parallel=1: 11\.7 GiB per NeuronCore exceeds .*TP 2 fits there",
        ),
    ],
)
def test_size_model_refusals(kwargs: dict[str, Any], pattern: str) -> None:
    with pytest.raises(NeuronConfigError, match=pattern):
        size_model(**kwargs)


# --------------------------------------------------------------------------------------------
# Serving: properties
# --------------------------------------------------------------------------------------------

SERVING_ARGS = (
    "parameters",
    "dtype",
    "sequence_length",
    "batch_size",
    "kv_heads",
    "layers",
    "hidden_size",
    "instance_type",
    "tensor_parallel",
    "headroom",
    "kv_cache_dtype",
)
# INF2-ARCH cores and KARP on-demand price order (cheapest first).
INF2_CORES = {"inf2.xlarge": 2, "inf2.8xlarge": 2, "inf2.24xlarge": 12, "inf2.48xlarge": 24}
INF2_BY_PRICE = ["inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge"]


@st.composite
def _serving_inputs(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly realistic model sizes and shapes; one in four draws with a wild value somewhere."""
    kwargs: dict[str, Any] = {
        "parameters": draw(
            st.one_of(
                st.sampled_from([8e9, 70e9, 1e9, 7e9, 13e9, 34e9, 180e9, 405e9]),
                st.floats(1e8, 3e11),
            )
        ),
        "dtype": draw(st.sampled_from(["bf16", "fp16", "int8", "fp8", "fp32", "BF16"])),
        "sequence_length": draw(st.sampled_from([4096, 2048, 8192, 128, 32768])),
        "batch_size": draw(st.sampled_from([1, 2, 4, 8, 16])),
        "kv_heads": draw(st.sampled_from([None, 8, 32, 64])),
        "layers": draw(st.sampled_from([None, 32, 16, 40, 80, 126])),
        "instance_type": None,
        "tensor_parallel": None,
    }
    # Validation mode (an instance and/or a TP) in about half the draws.
    if draw(st.booleans()):
        kwargs["instance_type"] = draw(st.sampled_from([*INF2_CORES, "trn1.32xlarge"]))
    if draw(st.integers(0, 2)) == 2:
        kwargs["tensor_parallel"] = draw(st.sampled_from([2, 8, 1, 12, 24, 32]))
    if draw(st.integers(0, 3)) == 3:
        field = draw(st.sampled_from(sorted(kwargs)))
        kwargs[field] = draw(
            st.sampled_from(
                [0, -1, 1.5, float("nan"), float("inf"), "8B", True, None, 10**9, "fp4", "p5.48xlarge", 3]
            )
        )
    return kwargs


@settings(max_examples=250, deadline=None)
@given(_serving_inputs())
def test_serving_plans_fit_or_are_refused(kwargs: dict[str, Any]) -> None:
    parameters = kwargs.pop("parameters")
    instance_type, tensor_parallel, dtype = (
        kwargs["instance_type"],
        kwargs["tensor_parallel"],
        kwargs["dtype"],
    )
    try:
        plan = size_model(parameters, **kwargs)
    except NeuronConfigError as err:
        event(f"refused: {err.field}")
        assert err.field in SERVING_ARGS
        assert str(err).startswith(f"{err.field}=")
        assert len(str(err)) > len(err.field) + 5
        return
    assert isinstance(plan, ServingPlan)
    event(f"accepted: {plan.instance_type}")
    cores = INF2_CORES.get(plan.instance_type, 32)
    tp = plan.tensor_parallel
    assert tensor_parallel is None or tp == tensor_parallel
    assert instance_type is None or plan.instance_type == instance_type
    assert 1 <= tp <= cores
    assert plan.replicas_per_instance == cores // tp
    assert plan.neuron_cores_used <= cores
    assert plan.hbm_limit_per_core_gib == 16.0
    # Memory per core = weights / TP + the core's whole KV heads (at least its even share), and it
    # respects the 35 % default headroom.
    assert plan.hbm_per_core_gib == pytest.approx(
        plan.weights_gib / tp + plan.kv_cache_per_core_gib, abs=2e-3
    )
    assert plan.kv_cache_per_core_gib >= plan.kv_cache_gib / tp - 1e-3
    assert plan.kv_heads_per_core >= 1
    # Every replica's weights fit 15/16 of the host RAM (Inf2/Trn1 architecture pages).
    host_gib = {"inf2.xlarge": 16, "inf2.8xlarge": 128, "inf2.24xlarge": 384, "inf2.48xlarge": 768}
    host = host_gib.get(plan.instance_type, 512)
    assert plan.replicas_per_instance * plan.weights_gib <= host * 15 / 16 + 1e-3
    assert plan.hbm_per_core_gib <= 16.0 * 0.65 + 1e-3
    assert plan.headroom >= 0.35 - 1e-4
    assert plan.weights_gib == pytest.approx(float(parameters) * _bytes(dtype) / GIB, abs=1e-3)
    assert len(plan.devices(plan.replicas_per_instance - 1)) == math.ceil(tp / 2)
    if instance_type is None:
        # The smallest (cheapest) Inf2 that fits: every cheaper one refuses.
        assert plan.instance_type in INF2_CORES
        for cheaper in INF2_BY_PRICE[: INF2_BY_PRICE.index(plan.instance_type)]:
            with pytest.raises(NeuronConfigError):
                size_model(parameters, **{**kwargs, "instance_type": cheaper})
        if tensor_parallel is None:
            assert cores % tp == 0  # a chosen TP leaves no core idle


def _bytes(dtype: str) -> int:
    return {"bf16": 2, "fp16": 2, "fp32": 4, "int8": 1, "fp8": 1}[dtype.lower()]


# --------------------------------------------------------------------------------------------
# Added with mutation testing (issue 18): whole texts (so a clause that must be absent is noticed),
# whole refusal messages, and plan fields compared exactly rather than approximately
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plan", "summary"),
    [
        (lambda: plan_training("trn1.32xlarge", 16, 32, 8),
         "16 x trn1.32xlarge: 32 ranks/node, world 512 = TP 32 x PP 8 x DP 2; TP inside NeuronLink; "
         "pipeline-parallel activations (point-to-point); data-parallel gradient all-reduce cross EFA"),
        # No LNC clause on trn1, no EP clause at EP 1; both when set.
        (lambda: plan_training("trn2.48xlarge", 2, 64, logical_nc_config=1),
         "2 x trn2.48xlarge, LNC=1: 128 ranks/node, world 256 = TP 64 x PP 1 x DP 4; TP inside NeuronLink; "
         "data-parallel gradient all-reduce cross EFA"),
        (lambda: plan_training("trn2.48xlarge", 2, 16, logical_nc_config=2, expert_parallel=4),
         "2 x trn2.48xlarge, LNC=2: 64 ranks/node, world 128 = TP 16 x PP 1 x DP 8 (EP 4); TP inside NeuronLink; "
         "data-parallel gradient all-reduce cross EFA"),
        # TP 12 groups straddle trn1 instances (32 cores): allowed only by opting in, and said so.
        (lambda: plan_training("trn1.32xlarge", 3, 12, allow_unlisted_tp=True),
         "3 x trn1.32xlarge: 32 ranks/node, world 96 = TP 12 x PP 1 x DP 8; TP CROSSES NeuronLink; "
         "data-parallel gradient all-reduce; tensor-parallel collectives (slow: keep TP inside NeuronLink) cross EFA"),
    ],
)  # fmt: skip
def test_training_summaries_in_full(plan: Any, summary: str) -> None:
    assert plan().summary() == summary


def test_notes_appear_only_where_they_apply() -> None:
    assert plan_training("trn1.32xlarge", 2, 32).notes == ()
    assert plan_training("trn2.48xlarge", 2, 64, logical_nc_config=2).notes == ()
    assert plan_training("trn2.48xlarge", 2, 64, logical_nc_config=1).notes == (
        "TP 64 at LNC=1 uses neuronx-distributed's alternative replica-group logic (Logic2)",
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: plan_training("trn1.32xlarge", 2, 8, expert_parallel=8),
         "expert_parallel=8: TP x EP = 64 exceeds the 32 NeuronCores of one NeuronLink domain (one "
         "trn1.32xlarge); lower EP or TP"),
        (lambda: plan_training("trn2.48xlarge", 2, 64, logical_nc_config=2, expert_parallel=2),
         "expert_parallel=2: TP x EP = 128 exceeds the 64 NeuronCores of one NeuronLink domain (one "
         "trn2.48xlarge) at LNC=2; lower EP or TP"),
        (lambda: plan_training("trn1.32xlarge", 2, 64),
         "tensor_parallel=64: exceeds the 32 NeuronCores of one NeuronLink domain (one trn1.32xlarge); "
         "use one of 1, 2, 4, 8, 32 and scale with PP/DP"),
        (lambda: plan_training("trn2u.48xlarge", 4, 128, logical_nc_config=2),
         "tensor_parallel=128: TP 128 spans 2 trn2u.48xlarge instances. 4 of them form a Trn2 UltraServer over "
         "NeuronLink-v3, but only UltraServer capacity guarantees a job's nodes share one: buy an UltraServer "
         "Capacity Block (Capacity.ultraserver_capacity_block) and plan with ultraserver_capacity=True, or keep "
         "it within one instance (64 ranks at LNC=2); use one of 1, 4, 16, 32, 64 and scale with PP/DP"),
        (lambda: size_model(405e9),
         "parameters=405000000000.0: needs 756.3 GiB at bf16 (weights 754.4 + KV cache 2.0 for batch 1 x 4096), "
         "more than any Inf2 instance holds with 35% headroom; quantize (fp8/int8), shorten the sequence, lower "
         "the batch or shard across instances"),
        (lambda: size_model(8e9, sequence_length=100_000, batch_size=8),
         "batch_size=8: needs 112.6 GiB at bf16 (weights 14.9 + KV cache 97.7 for batch 8 x 100000), more than "
         "any Inf2 instance holds with 35% headroom; quantize (fp8/int8), shorten the sequence, lower the batch "
         "or shard across instances"),
        (lambda: size_model(8e9, headroom=1.5), "headroom=1.5: must be a fraction in [0, 1), e.g. 0.35"),
    ],
)  # fmt: skip
def test_refusals_in_full(call: Any, message: str) -> None:
    with pytest.raises(NeuronConfigError, match=rf"^{re.escape(message)}$"):
        call()


def test_serving_plan_fields_exactly_and_its_explanation() -> None:
    # Llama-3.2 3B on inf2.xlarge at TP 2: 3.21e9 x 2 B = 5.979 GiB; KV = 28 layers x 2 (K, V) x 8 heads x
    # 128 x 4096 tokens x 2 B = 0.4375 GiB, 4 of the 8 heads per core = 0.21875 GiB.
    plan = size_model(3.21e9, instance_type="inf2.xlarge", tensor_parallel=2)
    assert (plan.weights_gib, plan.kv_cache_gib, plan.kv_cache_per_core_gib) == (5.979, 0.438, 0.2188)
    assert (plan.hbm_per_core_gib, plan.headroom, plan.host_memory_limit_gib) == (3.208, 0.7995, 15.0)
    assert plan.explanation == (
        "3.2B params at bf16 = 6.0 GiB weights + 0.4 GiB KV cache (batch 1 x 4096; assumed layers=28, "
        "kv_heads=8); per NeuronCore at TP 2: 3.0 GiB weights + 0.22 GiB KV (4 of 8 KV head(s) per core) = "
        "3.2 GiB of 16 (80% free) on inf2.xlarge, 1 replica(s) per instance; host RAM for loading: 6.0 of "
        "15 GiB usable"
    )


def test_explanation_names_a_separate_kv_dtype_and_no_assumption_when_the_shape_is_given() -> None:
    quantized = size_model(8e9, dtype="fp8", instance_type="inf2.8xlarge", tensor_parallel=1)
    assert quantized.explanation == (
        "8.0B params at fp8 = 7.5 GiB weights + 0.5 GiB KV cache at bf16 (batch 1 x 4096; assumed layers=32, "
        "kv_heads=8); per NeuronCore at TP 1: 7.5 GiB weights + 0.50 GiB KV (8 of 8 KV head(s) per core) = "
        "8.0 GiB of 16 (50% free) on inf2.8xlarge, 2 replica(s) per instance; host RAM for loading: 14.9 of "
        "120 GiB usable"
    )
    given = size_model(8e9, layers=32, kv_heads=8, hidden_size=4096, instance_type="inf2.8xlarge")
    assert given.explanation == (
        "8.0B params at bf16 = 14.9 GiB weights + 0.5 GiB KV cache (batch 1 x 4096); per NeuronCore at TP 2: "
        "7.5 GiB weights + 0.25 GiB KV (4 of 8 KV head(s) per core) = 7.7 GiB of 16 (52% free) on "
        "inf2.8xlarge, 1 replica(s) per instance; host RAM for loading: 14.9 of 120 GiB usable"
    )


def test_replicated_kv_heads_are_said_to_be_replicated() -> None:
    # Llama-3 70B's 8 KV heads over TP 24: each core holds one whole head, replicated.
    plan = size_model(70e9, batch_size=4)
    assert "(1 of 8 KV head(s) per core, replicated)" in plan.explanation
    # 8 heads over TP 8: one each, not replicated.
    even = size_model(
        70e9, instance_type="inf2.48xlarge", tensor_parallel=8, dtype="fp8", sequence_length=1024
    )
    assert "(1 of 8 KV head(s) per core)" in even.explanation


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        # 161B bf16 = 299.9 GiB: inf2.48xlarge's host RAM (576 GiB usable) would load it, but 299.9 / 24 =
        # 12.5 GiB per core exceeds 10.4: the weights themselves are the culprit, not the sequence.
        ({"parameters": 161e9},
         "parameters=161000000000.0: needs 301.1 GiB at bf16 (weights 299.9 + KV cache 1.2 for batch 1 x 4096), "
         "more than any Inf2 instance holds with 35% headroom; quantize (fp8/int8), shorten the sequence, lower "
         "the batch or shard across instances"),
        # 192 GiB of weights over 24 cores is exactly the 8.0 GiB usable at 50 % headroom: the weights fit,
        # exactly at the limit, so the KV cache (the sequence, at batch 1) is what does not.
        ({"parameters": 103_079_215_104, "headroom": 0.5},
         "sequence_length=4096: needs 193.2 GiB at bf16 (weights 192.0 + KV cache 1.2 for batch 1 x 4096), more "
         "than any Inf2 instance holds with 50% headroom; quantize (fp8/int8), shorten the sequence, lower the "
         "batch or shard across instances"),
        # From batch 2 on, the batch is named.
        ({"parameters": 8e9, "sequence_length": 400_000, "batch_size": 2},
         "batch_size=2: needs 112.6 GiB at bf16 (weights 14.9 + KV cache 97.7 for batch 2 x 400000), more than "
         "any Inf2 instance holds with 35% headroom; quantize (fp8/int8), shorten the sequence, lower the batch "
         "or shard across instances"),
        # A fixed TP when nothing fits at any TP: the same refusal, not one about that TP.
        ({"parameters": 405e9, "tensor_parallel": 24},
         "parameters=405000000000.0: needs 756.3 GiB at bf16 (weights 754.4 + KV cache 2.0 for batch 1 x 4096), "
         "more than any Inf2 instance holds with 35% headroom; quantize (fp8/int8), shorten the sequence, lower "
         "the batch or shard across instances"),
        ({"parameters": 70e9, "instance_type": "inf2.24xlarge", "tensor_parallel": 12},
         "instance_type='inf2.24xlarge': model needs 131.6 GiB (weights 130.4 + KV cache 1.2); at least 11.8 GiB "
         "per NeuronCore on inf2.24xlarge exceeds the 10.4 GiB usable (16 GiB less 35% headroom); inf2.48xlarge "
         "with TP 24 would fit"),
        ({"parameters": 3.21e9, "sequence_length": 1_000_000, "instance_type": "inf2.xlarge"},
         "instance_type='inf2.xlarge': model needs 112.8 GiB (weights 6.0 + KV cache 106.8); at least 56.4 GiB "
         "per NeuronCore on inf2.xlarge exceeds the 10.4 GiB usable (16 GiB less 35% headroom); no Inf2 instance "
         "fits: quantize (fp8/int8), shorten the sequence, lower the batch or shard across instances"),
    ],
)  # fmt: skip
def test_what_does_not_fit_is_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(NeuronConfigError, match=rf"^{re.escape(message)}$"):
        size_model(**kwargs)


# 7 GiB of bf16 weights (3,758,096,384 parameters) plus a KV cache of exactly 1 GiB (32 layers x 2 x 8 KV
# heads x 128 x 8,192 tokens x 2 bytes) is 8.0 GiB on one NeuronCore: exactly the usable HBM at 50 % headroom.
EXACTLY_ONE_CORE = {
    "parameters": 3_758_096_384,
    "layers": 32,
    "kv_heads": 8,
    "sequence_length": 8192,
    "instance_type": "inf2.48xlarge",
    "tensor_parallel": 1,
    "headroom": 0.5,
}


def test_a_model_that_fills_a_core_exactly_fits() -> None:
    plan = size_model(**EXACTLY_ONE_CORE)
    assert (plan.tensor_parallel, plan.hbm_per_core_gib, plan.replicas_per_instance) == (1, 8.0, 24)


def test_host_memory_refusal_when_the_core_fits_exactly() -> None:
    # 24 replicas x 7 GiB = 168 GiB of host RAM, over the 15.4 GiB usable at 98 % host headroom; TP 12
    # (2 replicas, 14 GiB) fits. The HBM per core fits exactly, so the host is named, not the core.
    with pytest.raises(
        NeuronConfigError,
        match=r"^tensor_parallel=1: 24 replicas of 7\.0 GiB load 168\.0 GiB into host memory, more than the "
        r"15\.4 GiB usable on inf2\.48xlarge \(HOST-MEM\); TP 12 fits there$",
    ):
        size_model(**EXACTLY_ONE_CORE, host_memory_headroom=0.98)


def test_a_tp_that_leaves_cores_idle_loads_one_copy_per_replica() -> None:
    # TP 8 on inf2.24xlarge's 12 cores: one replica (4 cores idle), one copy of the 14.9 GiB in host RAM.
    plan = size_model(8e9, instance_type="inf2.24xlarge", tensor_parallel=8)
    assert plan.replicas_per_instance == 1
    assert plan.explanation.endswith(
        "1 replica(s) per instance; host RAM for loading: 14.9 of 360 GiB usable"
    )


def test_tp_16_on_inf2_is_refused_because_no_source_lists_it() -> None:
    # NXDI-TP lists Inf2 1, 2, 4, 8, 24 (TP-APPNOTE and OPTN-NB add 12); nobody lists 16.
    with pytest.raises(
        NeuronConfigError,
        match=r"^tensor_parallel=16: inf2\.48xlarge has 24 NeuronCores; the Neuron runtime supports TP 1, 2, 4, "
        r"8, 12, 24 for inference there \(NXDI-TP; TP 12 from TP-APPNOTE and OPTN-NB\)$",
    ):
        size_model(8e9, instance_type="inf2.48xlarge", tensor_parallel=16)


def test_serving_refusals_and_plans_quote_where_training_and_inference_sources_disagree() -> None:
    # Trn1 TP 4: training forms it (RT-2.21), NxD Inference does not list it.
    with pytest.raises(
        NeuronConfigError,
        match=r"^tensor_parallel=4: trn1\.32xlarge has 32 NeuronCores; the Neuron runtime supports TP 1, 2, 8, 16, "
        r"32 for inference there \(NXDI-TP\); sources disagree: the training runtime forms TP 4 on adjacent trn1 "
        r"cores \(RT-2\.21\), but NxD Inference does not list TP 4 for Trn1 \(NXDI-TP\)$",
    ):
        size_model(8e9, instance_type="trn1.32xlarge", tensor_parallel=4)
    # Trn2 TP 8 at LNC 2: NxD Inference lists it, neuronx-distributed training cannot form it; serving says so.
    plan = size_model(8e9, instance_type="trn2.48xlarge", tensor_parallel=8)
    assert plan.explanation.endswith(
        "; TP 8: sources disagree: NxD Inference lists TP 8 for Trn2 at LNC 2 (NXDI-TP), but neuronx-distributed "
        "cannot form TP 8 training groups at LNC 2 (NXD-PS)"
    )
    # Inf2 TP 12: accepted (TP-APPNOTE, OPTN-NB), with the disagreement stated.
    twelve = size_model(8e9, instance_type="inf2.24xlarge", tensor_parallel=12)
    assert (
        "; TP 12: sources disagree: TP-APPNOTE and optimum-neuron (OPTN-NB) use TP 12 on Inf2"
        in twelve.explanation
    )
    assert (
        "sources disagree"
        not in size_model(8e9, instance_type="inf2.48xlarge", tensor_parallel=24).explanation
    )


def test_attention_heads_are_reported_as_assumed_only_when_they_were() -> None:
    # TP 12 is not a multiple of 8 KV heads: NxD Inference converts to MHA over the query heads.
    kv_only = size_model(8e9, kv_heads=8, instance_type="inf2.24xlarge", tensor_parallel=12)
    assert "; assumed layers=32, attention_heads=32)" in kv_only.explanation
    with_hidden = size_model(
        8e9, kv_heads=8, hidden_size=4096, instance_type="inf2.24xlarge", tensor_parallel=12
    )
    assert "(batch 1 x 4096; assumed layers=32);" in with_hidden.explanation
    reference = size_model(8e9, instance_type="inf2.24xlarge", tensor_parallel=12)
    assert "(batch 1 x 4096; assumed layers=32, kv_heads=8);" in reference.explanation


def test_hidden_size_alone_means_one_kv_head_per_head_dim() -> None:
    # MHA with the nearest reference model's head dimension. An 8B-sized model: 128 (MODEL-SHAPES, Llama
    # 3.1 8B) -> hidden 1,000 is 7 whole heads (never 7.8); KV = 16 layers x 2 x 7 x 128 x 4,096 x 2 B =
    # 0.219 GiB.
    plan = size_model(8e9, hidden_size=1000, layers=16, instance_type="inf2.8xlarge", tensor_parallel=2)
    assert (plan.kv_heads_per_core, plan.kv_cache_gib) == (4, 0.219)
    # A 1B-sized model: Llama 3.2 1B's 64 (2,048 hidden / 32 heads) -> 15 heads of 64; KV = 16 x 2 x 15
    # x 64 x 4,096 x 2 B = 0.234 GiB, and the explanation says the head dimension was assumed.
    small = size_model(1e9, hidden_size=1000, layers=16, instance_type="inf2.xlarge", tensor_parallel=1)
    assert (small.kv_heads_per_core, small.kv_cache_gib) == (15, 0.234)
    assert "assumed head_dim=64)" in small.explanation
    # A hidden size under one head still has one head.
    tiny = size_model(1e8, hidden_size=64, layers=2, instance_type="inf2.xlarge", tensor_parallel=1)
    assert tiny.kv_heads_per_core == 1


def test_16_bit_weights_keep_their_own_kv_dtype() -> None:
    plan = size_model(8e9, dtype="fp16", instance_type="inf2.8xlarge")
    assert "= 14.9 GiB weights + 0.5 GiB KV cache (batch 1 x 4096;" in plan.explanation  # no " at bf16"


# --------------------------------------------------------------------------------------------
# Expert parallelism and UltraServer capacity (Trn2 UltraServers, Trn3): whole messages and notes,
# each branch taken and not taken, at the edges (issue 18, measured after the Trainium3 work)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # The flags must be booleans, named as passed.
        (lambda: plan_training("trn1.32xlarge", 2, 8, ultraserver_capacity="yes"),
         "ultraserver_capacity='yes': use True or False"),
        (lambda: plan_training("trn1.32xlarge", 2, 8, allow_unlisted_tp=1),
         "allow_unlisted_tp=1: use True or False"),
        (lambda: plan_training("trn1.32xlarge", 1, 8, expert_parallel=0),
         "expert_parallel=0: must be a whole number >= 1"),
        (lambda: plan_training("trn3.48xlarge", 1, 8),
         "logical_nc_config=None: the default logical NeuronCore config of trn3.48xlarge is not published (LNC: "
         "1 or 2 apply to Trn3, the default is stated for Trn2 only); pass logical_nc_config=1 or 2"),
        (lambda: plan_training("trn2.48xlarge", 4, 64, ultraserver_capacity=True),
         "ultraserver_capacity=True: trn2.48xlarge is not a server of an UltraServer; UltraServers are made of "
         "trn2u.48xlarge, trn3-gen2-server, trn3.48xlarge"),
        # NXD-PS: TP 8 cannot form replica groups at LNC=2 on trn2, but is listed at LNC=1 (and TP 16 the
        # other way round), so the message offers the other LNC.
        (lambda: plan_training("trn2.48xlarge", 2, 8, logical_nc_config=2),
         "tensor_parallel=8: neuronx-distributed does not support TP 8 at LNC=2 on trn2.48xlarge (replica "
         "groups cannot be formed, NXD-PS); use one of 1, 4, 16, 32, 64 or LNC=1; sources disagree: NxD Inference "
         "lists TP 8 for Trn2 at LNC 2 (NXDI-TP), but neuronx-distributed cannot form TP 8 training groups at LNC 2 "
         "(NXD-PS)"),
        (lambda: plan_training("trn2.48xlarge", 2, 16, logical_nc_config=1),
         "tensor_parallel=16: neuronx-distributed does not support TP 16 at LNC=1 on trn2.48xlarge (replica "
         "groups cannot be formed, NXD-PS); use one of 1, 4, 8, 32, 64, 128 or LNC=2"),
        (lambda: plan_training("trn1.32xlarge", 1, 16),
         "tensor_parallel=16: TP 16 is not a documented TP degree on trn1.32xlarge (no training source documents "
         "it); use one of 1, 2, 4, 8, 32 (catalog.TRAINING_TP_DEGREES), or pass allow_unlisted_tp=True to take "
         "responsibility for it; sources disagree: NxD Inference lists TP 16 for Trn1 (NXDI-TP), but no training "
         "source does (TP-APPNOTE, RT-2.21)"),
        # TP 8 x EP 3 = 24 ranks inside one trn1.32xlarge (32 cores): aligned blocks of 24 straddle instances.
        (lambda: plan_training("trn1.32xlarge", 3, 8, expert_parallel=3),
         "expert_parallel=3: TP x EP = 8 x 3 = 24 ranks per expert-parallel group would straddle NeuronLink "
         "domains of 32 ranks on trn1.32xlarge; expert-parallel groups must fit one domain: choose EP so that "
         "TP x EP divides 32"),
        # Trn3 Gen2 server: 16 ranks at LNC=2. TP 8 x EP 3 = 24 ranks span 2 servers (24 divides the 576 of an
        # UltraServer, so it may), and DP 6 is divisible by EP 3, but 3 nodes are not a whole number of groups.
        (lambda: plan_training("trn3-gen2-server", 3, 8, logical_nc_config=2, expert_parallel=3,
                               ultraserver_capacity=True, allow_unlisted_tp=True),
         "nodes=3: each TP x EP group spans 2 trn3-gen2-server instances of one UltraServer, so the nodes must "
         "be a whole number of groups: use a multiple of 2"),
    ],
)  # fmt: skip
def test_expert_parallel_and_ultraserver_refusals_in_full(call: Any, message: str) -> None:
    with pytest.raises(NeuronConfigError, match=rf"^{re.escape(message)}$"):
        call()


def test_a_group_spanning_two_servers_is_accepted_on_a_whole_number_of_groups() -> None:
    # The same 24-rank groups as the refusal above, on 6 nodes (96 ranks): DP 12, 2 servers per group.
    plan = plan_training(
        "trn3-gen2-server", 6, 8, logical_nc_config=2, expert_parallel=3,
        ultraserver_capacity=True, allow_unlisted_tp=True,
    )  # fmt: skip
    assert (plan.world_size, plan.data_parallel, plan.expert_parallel) == (96, 12, 3)
    assert plan.ultraserver_capacity is True
    assert plan.fabrics == {
        "tensor": FABRIC_INSTANCE,
        "expert": FABRIC_ULTRASERVER,
        "data": FABRIC_ULTRASERVER,
    }


def test_a_tp_broken_at_both_lncs_offers_no_other_lnc(monkeypatch: pytest.MonkeyPatch) -> None:
    # No published degree is broken at both LNCs today; if a source adds one, the message must not send the
    # user to an LNC where it is broken too.
    from cdk_neuron import catalog

    monkeypatch.setitem(catalog.TRAINING_TP_UNSUPPORTED, "trn2.48xlarge", {1: (16,), 2: (16,)})
    with pytest.raises(NeuronConfigError) as caught:
        plan_training("trn2.48xlarge", 2, 16, logical_nc_config=2)
    assert str(caught.value).endswith("use one of 1, 4, 16, 32, 64")


def test_ultraserver_notes_appear_only_where_they_apply() -> None:
    # One trn2u.48xlarge is one domain whatever the capacity: no note either way.
    assert plan_training("trn2u.48xlarge", 1, 64).notes == ()
    assert plan_training("trn2u.48xlarge", 1, 64, ultraserver_capacity=True).notes == ()
    assert plan_training("trn2u.48xlarge", 2, 64).notes == (
        "trn2u.48xlarge nodes are planned as separate NeuronLink domains: without UltraServer capacity "
        "(ultraserver_capacity=True) nothing guarantees they share an UltraServer, so traffic between nodes is "
        "counted as EFA traffic",
    )
    assert plan_training("trn2u.48xlarge", 2, 64, ultraserver_capacity=True).notes == (
        "Trn2 UltraServer: every 4 nodes in the launcher's topology order share one NeuronLink-v3 domain; the "
        "launcher refuses nodes that do not allow the plan",
    )


def test_notes_for_tp_that_straddles_instances_and_for_trn1_tp4_in_full() -> None:
    assert plan_training("trn1.32xlarge", 3, 12, allow_unlisted_tp=True).notes == (
        "TP 12 does not divide the 32 cores of one NeuronLink domain: some TP groups straddle instances and "
        "their collectives cross EFA (allowed by allow_unlisted_tp)",
    )
    assert plan_training("trn1.32xlarge", 2, 4).notes == (
        "trn1 TP=4 uses locally connected, non-contiguous ranks; needs LOCAL_WORLD_SIZE",
        "TP 4: sources disagree: the training runtime forms TP 4 on adjacent trn1 cores (RT-2.21), but NxD "
        "Inference does not list TP 4 for Trn1 (NXDI-TP)",
    )
    # An unlisted degree taken with the opt-in: the plan says it is undocumented for training and what
    # the inference source says.
    assert plan_training("trn1.32xlarge", 1, 16, allow_unlisted_tp=True).notes == (
        "TP 16 is not a documented degree on trn1.32xlarge (allow_unlisted_tp)",
        "TP 16: sources disagree: NxD Inference lists TP 16 for Trn1 (NXDI-TP), but no training source does "
        "(TP-APPNOTE, RT-2.21)",
    )
    # Trn2 at LNC 2: TP 2 is listed for inference only.
    with pytest.raises(NeuronConfigError) as raised:
        plan_training("trn2.48xlarge", 1, 2, logical_nc_config=2)
    assert raised.value.fix.endswith(
        "; sources disagree: NxD Inference lists TP 2 for Trn2 at LNC 2 (NXDI-TP), but no training source does"
    )
    # No disagreement, no note.
    assert not any("disagree" in n for n in plan_training("trn1.32xlarge", 2, 8).notes)


def test_a_dimension_of_degree_one_has_no_fabric() -> None:
    assert plan_training("trn1.32xlarge", 2, 1).fabrics == {"data": FABRIC_EFA}
    assert plan_training("trn1.32xlarge", 2, 2).fabrics == {"tensor": FABRIC_INSTANCE, "data": FABRIC_EFA}
    ep2 = plan_training("trn1.32xlarge", 2, 8, expert_parallel=2)
    assert ep2.fabrics == {"tensor": FABRIC_INSTANCE, "expert": FABRIC_INSTANCE, "data": FABRIC_EFA}
    assert ep2.summary() == (
        "2 x trn1.32xlarge: 32 ranks/node, world 64 = TP 8 x PP 1 x DP 8 (EP 2); TP inside NeuronLink; "
        "data-parallel gradient all-reduce cross EFA"
    )
    assert plan_training("trn1.32xlarge", 2, 8).ultraserver_capacity is False


def test_host_memory_headroom_refusal_and_limit_exactly() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^host_memory_headroom=1\.5: must be a fraction in \[0, 1\), e\.g\. 0\.25$"
    ):
        size_model(8e9, host_memory_headroom=1.5)
    # inf2.8xlarge has 128 GiB: 128 x (1 - 0.3333) = 85.3376, kept to three decimals.
    assert (
        size_model(8e9, instance_type="inf2.8xlarge", host_memory_headroom=0.3333).host_memory_limit_gib
        == 85.338
    )
    assert (
        size_model(8e9, instance_type="inf2.8xlarge", host_memory_headroom=0.3).host_memory_limit_gib == 89.6
    )


def test_explanation_rounds_the_parameter_count_in_billions() -> None:
    # 8.05e9 parameters are 8.05 B: one decimal rounds half up to 8.1.
    assert size_model(8.05e9, instance_type="inf2.8xlarge").explanation.startswith("8.1B params at bf16")


def test_attention_heads_from_a_hidden_size_are_whole_heads() -> None:
    # A 3B-sized model (head dim 128): hidden 1,600 / 128 = 12 whole heads (12.5 is not a head count). 5 KV
    # heads at TP 12: NxD converts to
    # MHA, the 12 query heads pad to 12 (one per core), so each core holds one KV head.
    plan = size_model(3e9, instance_type="inf2.24xlarge", tensor_parallel=12, kv_heads=5, hidden_size=1600)
    assert plan.kv_heads_per_core == 1


def test_fabric_and_dimension_names_are_what_plans_print() -> None:
    # Written into `cdk-neuron plan --output json` and the summaries: renaming one changes the CLI's output.
    assert (FABRIC_INSTANCE, FABRIC_ULTRASERVER, FABRIC_EFA) == (
        "NeuronLink (one instance)",
        "NeuronLink/NeuronSwitch (one UltraServer)",
        "EFA",
    )
    assert planner.DIMENSIONS == ("tensor", "expert", "data", "pipeline")


def test_plans_built_by_hand_get_the_documented_defaults() -> None:
    training = {
        f.name: f.default for f in dataclasses.fields(TrainingPlan) if f.default is not dataclasses.MISSING
    }
    assert training == {
        "notes": (),
        "allow_unlisted_tp": False,
        "expert_parallel": 1,
        "ultraserver_capacity": False,
        "group_fabrics": (),
        "model": None,
        "zero1": True,
        "activation_checkpointing": "none",
        "recompute": (),
        "memory": None,
        "hbm_headroom": 0.5,
    }
    serving = {
        f.name: f.default for f in dataclasses.fields(ServingPlan) if f.default is not dataclasses.MISSING
    }
    assert serving == {
        "kv_cache_per_core_gib": 0.0,
        "kv_heads_per_core": 0,
        "host_memory_limit_gib": 0.0,
        "host_memory_override": None,
    }


def test_reference_shapes_are_the_published_model_configs() -> None:
    # config.json of each model on the Hugging Face Hub (num_hidden_layers, num_key_value_heads,
    # num_attention_heads, head_dim = hidden_size / num_attention_heads): meta-llama Llama-3.2-1B,
    # Llama-3.2-3B, Llama-3.1-8B, Llama-2-13b-hf, Llama-3.1-70B, Llama-3.1-405B.
    shapes = [
        (s.parameters_b, s.layers, s.kv_heads, s.attention_heads, s.head_dim)
        for s in planner._REFERENCE_SHAPES
    ]
    assert shapes == [
        (1.2, 16, 8, 32, 64),
        (3.2, 28, 8, 24, 128),
        (8.0, 32, 8, 32, 128),
        (13.0, 40, 40, 40, 128),
        (70.6, 80, 8, 64, 128),
        (405.0, 126, 8, 128, 128),
    ]


def test_a_multi_node_plan_without_efa_names_only_the_types_with_efa() -> None:
    # trn1.2xlarge is a training type without EFA: it must not be offered as the way out.
    with pytest.raises(
        NeuronConfigError,
        match=r"^nodes=2: trn1\.2xlarge has no EFA, so it cannot run multi-node jobs; use nodes=1 or one of "
        r"trn1\.32xlarge, trn1n\.32xlarge, trn2\.3xlarge, trn2\.48xlarge, trn2u\.48xlarge, trn3-gen2-server, "
        r"trn3\.48xlarge$",
    ):
        plan_training("trn1.2xlarge", 2, 2)
