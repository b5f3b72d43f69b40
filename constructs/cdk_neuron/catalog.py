"""The Neuron instance catalog: every hardware, offering and price fact cdk-neuron uses.

Plain Python: importing this module never imports ``aws_cdk``, so the planner, the CLI and users'
own tooling can use it outside CDK.

Every fact group carries its source and date (:data:`SOURCES`). Where sources disagree the choice
is recorded next to the value. Offerings and prices are dated snapshots, not live truth:
``cdk-neuron preflight`` verifies offerings, quotas and capacity against the live account, and
``cdk-neuron cost`` prints the price table's date.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from cdk_neuron import validation
from cdk_neuron.errors import NeuronConfigError, one_of

Family = Literal["training", "inference"]


@dataclass(frozen=True)
class Source:
    """Where a fact group comes from, and how old it is."""

    key: str
    citation: str
    date: str


SOURCE_LIST: tuple[Source, ...] = (
    Source(
        "TRN1-ARCH",
        "aws-neuron/aws-neuron-sdk general/arch/neuron-hardware/trn1-arch.rst @60224f42",
        "2025",
    ),
    Source(
        "TRN2-ARCH",
        "aws-neuron/aws-neuron-sdk about-neuron/arch/neuron-hardware/trn2-arch.rst (current revision)",
        "2026",
    ),
    Source(
        "LNC",
        "aws-neuron/aws-neuron-sdk about-neuron/arch/neuron-features/logical-neuroncore-config.rst @732f514",
        "2026",
    ),
    Source(
        "INF2-ARCH",
        "aws-neuron/aws-neuron-sdk general/arch/neuron-hardware/inf2-arch.rst @36f05ba",
        "2025",
    ),
    Source(
        "MOTO",
        "getmoto/moto @0af643a moto/ec2/resources/instance_types.json and "
        "instance_type_offerings/availability-zone-id/*.json (generated from DescribeInstanceTypes / "
        "DescribeInstanceTypeOfferings)",
        "2026-08-22",
    ),
    Source(
        "KARP",
        "aws/karpenter-provider-aws pkg/providers/pricing/zz_generated.pricing_aws.go @031e72b6 "
        "(AWS Price List API, us-east-1)",
        "2026-01-19",
    ),
    Source(
        "EC2-NETBW",
        'Amazon EC2 User Guide, "Amazon EC2 instance network bandwidth" '
        "(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-network-bandwidth.html): traffic "
        "within the Region can use the instance's full bandwidth; a single flow is limited to 5 Gbps outside "
        'a cluster placement group; "up to" types burst above their baseline for a limited time',
        "2026-12-02",
    ),
    Source(
        "KARP-BW",
        "aws/karpenter-provider-aws pkg/providers/instancetype/zz_generated.bandwidth.go (baseline network "
        "bandwidth per instance type, generated from the EC2 documentation)",
        "2026-08-18",
    ),
    Source(
        "EBS-OPT",
        'Amazon EBS User Guide, "Amazon EBS-optimized instance types" '
        '(https://docs.aws.amazon.com/ebs/latest/userguide/ebs-optimized.html): instances with "up to" '
        "EBS bandwidth reach their maximum for 30 minutes at least once every 24 hours",
        "2026-12-02",
    ),
    Source(
        "INFERENTIA2",
        "aws-neuron/aws-neuron-sdk general/arch/neuron-hardware/inferentia2.rst @4c317ca: 32 GiB of HBM "
        "at 820 GiB/s per Inferentia2 chip",
        "2025",
    ),
    Source("SKY", "skypilot-org/skypilot-catalog catalogs/v7/aws/vms.csv @001367d2", "2025-05"),
    Source("FMB", "aws-samples/foundation-model-benchmarking-tool pricing.yml @00ef155d", "2024-06-11"),
    Source(
        "EFA-MULTI", "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html", "2026"
    ),
    Source(
        "EFA-SETUP",
        "aws-neuron/aws-neuron-sdk frameworks/torch/torch-neuronx/setup-trn1-multi-node-execution.rst @5389790",
        "2025",
    ),
    Source(
        "NXD-PS",
        "aws-neuron/neuronx-distributed src/neuronx_distributed/parallel_layers/parallel_state.py "
        "@fbac349 get_logic_chosen (trn2 replica groups that work, need Logic2, or are not supported)",
        "2026-04-09",
    ),
    Source(
        "TP-APPNOTE",
        "aws-neuron/aws-neuron-sdk about-neuron/transformers/generative-llm-inference-with-neuron.rst "
        '@b207f98 ("the Neuron runtime supports tensor-parallelism degrees 2, 8, and 32 on Trn1 and '
        'supports tensor-parallelism degrees 2, 4, 8, 12 and 24 on Inf2")',
        "2026-07-22",
    ),
    Source(
        "RT-2.21",
        "aws-neuron/aws-neuron-sdk release-notes/components/runtime.rst @a3247f5, Neuron Runtime 2.23 "
        '(Neuron 2.21.0): "Added support for 4-rank replica group on adjacent Neuron cores on '
        'TRN1/TRN1N"; neuronx-distributed parallel_state.py @fbac349 builds trn1 TP=4 groups from '
        "locally connected ranks (needs LOCAL_WORLD_SIZE)",
        "2024-12-20",
    ),
    Source(
        "NXDI-GQA",
        "aws-neuron/neuronx-distributed-inference src/neuronx_distributed_inference/modules/attention/"
        "gqa.py @c63afe0 (determine_sharding_strategy, get_shardable_head_counts: KV heads replicated "
        "to the TP degree, or converted to MHA when TP is not a multiple of them); aws-neuron-sdk "
        "libraries/nxd-inference/developer_guides/feature-guide.rst @86a9286 (GQA sharding strategies)",
        "2026-04-09",
    ),
    Source(
        "HOST-MEM",
        "https://docs.aws.amazon.com/dlami/latest/devguide/inferentia.html (Recommended Inferentia "
        "Instances: \"If your model exceeds an instance's available RAM, choose a different instance "
        'type with enough memory"); aws-neuron-sdk libraries/nxd-inference/developer_guides/'
        "weights-sharding-guide.rst @49ee15c (loading reads the checkpoint on the host and shards it "
        "per rank; shard-on-load is the default since Neuron 2.23); margin calibrated on "
        "huggingface.co/aws-neuron/CodeLlama-7b-hf-neuron-8xlarge README @64c28e7 (7B fp16, 12.6 GiB "
        'of weights, on inf2.xlarge\'s 16 GiB "pretty much maxes out the RAM")',
        "2026-12-01",
    ),
    Source(
        "TGI-DOC", "huggingface/text-generation-inference docs/source/backends/neuron.md @0b28aab", "2025"
    ),
    Source(
        "CB-DOC",
        "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html (Capacity Blocks "
        "for ML: instance Capacity Blocks for trn1.32xlarge and trn2.48xlarge; no Inf2, no trn1n)",
        "2026",
    ),
    Source(
        "CB-HOW",
        "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-how.html, read in AWS's "
        "de_de and ja_jp editions (the English page was not in our copy): Capacity Blocks reserve "
        "p6-b200, p5, p5e, p5en, p4d, p4de, trn1 and trn2 instances; the UltraServer types P6e-GB200 "
        "and Trn2 (preview) are sold as UltraServer Capacity Blocks, one Capacity Block per UltraServer",
        "2026-12-01",
    ),
    Source(
        "CB-API",
        "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityBlock.html (a Capacity Block "
        "has a capacityBlockId, an ultraserverType and a capacityReservationIdSet: instances launch into "
        "its cr- Capacity Reservations, as for instance Capacity Blocks (capacity-blocks-launch.html))",
        "2026-12-01",
    ),
    Source(
        "BATCH-LT",
        "https://docs.aws.amazon.com/batch/latest/userguide/launch-templates.html (Use Amazon EC2 launch "
        'templates with AWS Batch: "The following launch template parameters are ignored by AWS Batch" '
        'lists instance type, instance role, network interface subnets, "Instance market options (AWS '
        'Batch must control Spot Instance configuration)" and disable API termination); no AWS Batch page '
        "documents Capacity Blocks (the EC2 guide's capacity-blocks-launch.html names EC2 Fleet, Auto "
        "Scaling, EKS managed node groups and ParallelCluster, looked 2026-12-02)",
        "2026-12-02",
    ),
    Source(
        "ASG-CB",
        "https://docs.aws.amazon.com/autoscaling/ec2/userguide/launch-template-capacity-blocks.html (Use "
        "Capacity Blocks for machine learning workloads: a launch template with the Capacity Block's "
        "reservation id and market type capacity-block, an Auto Scaling group in the block's AZ, scaled "
        "to zero more than 30 minutes before the block ends)",
        "2026-12-02",
    ),
    Source(
        "ODCR",
        "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-reservations.html (On-Demand "
        "Capacity Reservations reserve an instance type in one AZ; the guide lists no exclusion for the "
        "Trn1/Trn2/Inf2 types sold On-Demand, looked 2026-12-01); skypilot-org/skypilot#8054 "
        "(a trn2.48xlarge ODCR, 2025-11-21)",
        "2026-12-01",
    ),
    Source(
        "CR-CPG",
        "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html (Capacity Reservations in "
        "cluster placement groups: created in the group, cannot be moved in or out, the group cannot be "
        "deleted while they are active) and capacity-reservations-launch.html (select the cluster "
        "placement group when launching into the reservation); using-cpg-odcr-crg.html (targeting a "
        "reservation group without the placement group launches outside it)",
        "2026-12-01",
    ),
    Source(
        "US-EKS",
        "aws-neuron/aws-neuron-sdk deploy/eks/ultraserver.rst @3afa0fd (UltraServer jobs need a "
        "topology-aware launcher: pod affinity per UltraServer and NEURON_RT_ULTRASERVER_MODE / "
        "_SERVER_ID / _NODE_ID for the runtime)",
        "2026-05-21",
    ),
    Source(
        "ECS-AMI-NEURON",
        "aws/amazon-ecs-ami scripts/enable-ecs-agent-inferentia-support.sh @130a7f3 (installs "
        "aws-neuronx-dkms, aws-neuronx-oci-hook, oci-add-hooks and aws-neuronx-tools for AMI type "
        "al2023neu; no EFA packages)",
        "2026-01-05",
    ),
    Source(
        "ECS-AMI-BASE",
        "aws/amazon-ecs-ami release-al2023.auto.pkrvars.hcl @a2532d3 (source_ami_al2023 = "
        "al2023-ami-minimal-...; al2023neu.pkr.hcl builds from var.source_ami_al2023)",
        "2026-08-21",
    ),
    Source(
        "TRN3-ARCH",
        'aws-neuron/aws-neuron-sdk about-neuron/arch/neuron-hardware/trn3-arch.rst @539a73c5, "Amazon EC2 '
        'Trn3 Architecture" (Trn3 is sold in two UltraServer configurations: Gen1, 4 servers x 16 '
        "Trainium3 = 64 chips; Gen2, 36 servers x 4 Trainium3 = 144 chips; both one all-to-all scale-up "
        "domain over NeuronLink-v4 and NeuronSwitch-v1; per-UltraServer host vCPUs, memory, HBM and EFA "
        "Gbps in its specification table)",
        "2026-04-09",
    ),
    Source(
        "TRAINIUM3",
        "aws-neuron/aws-neuron-sdk about-neuron/arch/neuron-hardware/trainium3.rst @ee7d6e00 (a "
        "Trainium3 chip has eight NeuronCore-v4 and 144 GiB of device memory) and "
        "about-neuron/arch/neuron-features/logical-neuroncore-config.rst (LNC is 1 or 2 and applies to "
        "Trn2 and Trn3; its default of 2 is stated for Trn2 only)",
        "2026-07-07",
    ),
    Source(
        "TRN3-TUTORIAL",
        "aws-neuron/aws-neuron-sdk libraries/nxd-inference/tutorials/trn3-gpt-oss-120b-tutorial.rst "
        "@ee7d6e00 (8 endpoints per Trn3 instance, each TP 8 at LNC=2: 64 logical, 128 physical "
        "NeuronCores per instance)",
        "2026-07-07",
    ),
    Source(
        "NEURON-DRIVER",
        "aws-neuron/aws-neuron-driver v4/neuron_dhal_v4.c @9cc489e (v4_platform_map: trn3.48xlarge, "
        "trn3sn.48xlarge and trn3s-es.48xlarge -> the 16-device PDS platform; trn3p.48xlarge -> ULTRASERVER "
        "(pod election, as on trn2u); trn3e.24xlarge -> MAX, whose device table has 4 entries; four "
        '"3xl" one-device names: trn3pd98.3xlarge, trn3s-es.3xlarge, trn3sn.3xlarge, trn3sn-es.3xlarge)',
        "2026-12-01",
    ),
    Source(
        "EC2-MODEL",
        "boto/botocore 1.44.8 botocore/data/ec2/2016-11-15/service-2.json InstanceType enum (lists "
        "trn1.2xlarge, trn1.32xlarge, trn1n.32xlarge, trn2.3xlarge, trn2.48xlarge, trn2u.48xlarge and "
        "the inf2 sizes; no Trn3 type), read 2026-12-01",
        "2026-12-01",
    ),
    Source(
        "MOTO-525",
        "getmoto/moto 5.2.5 moto/ec2/resources/instance_types.json.gz and "
        "instance_type_offerings/availability-zone-id (generated from DescribeInstanceTypes / "
        "DescribeInstanceTypeOfferings): trn2.3xlarge and trn2u.48xlarge, read through "
        "ec2.describe_instance_types",
        "2026-12-01",
    ),
    Source(
        "TOPOLOGY-API",
        "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_InstanceTopology.html and "
        "API_DescribeInstanceTopology.html (networkNodeSet: the network nodes above an instance, "
        "hashed per account; capacityBlockId: only for UltraServer instances, identifies the "
        "UltraServer domain, and may be null right after launch by eventual consistency); "
        "ec2-instance-topology-prerequisites.html (3 network nodes for trn1, trn1n, trn2 and trn2u; no "
        "Trn3 type listed, looked 2026-12-01; IAM: ec2:DescribeInstanceTopology)",
        "2026-12-01",
    ),
    Source(
        "US-CB",
        "dev.classmethod.jp, 'Amazon EC2 Capacity Blocks for ML の Instance CB と UltraServer CB の違い', "
        "https://dev.classmethod.jp/articles/ec2-capacity-blocks-for-ml-instance-cb-vs-ultraserver-cb "
        "(UltraServer Capacity Blocks are bought by UltraServer count, can be targeted through resource "
        "groups, cannot be shared with AWS RAM)",
        "2026-02-08",
    ),
    Source(
        "IAM-EC2",
        "AWS Service Authorization Reference, 'Actions, resources, and condition keys for Amazon EC2', "
        "https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html "
        '(DescribeInstanceTopology lists no resource type: it is granted on "*")',
        "2026-12-01",
    ),
    Source(
        "SVC-NAT",
        "cloudburn.io, 'AWS NAT Gateway Pricing: Complete Guide with Calculator', "
        "https://cloudburn.io/blog/aws-nat-gateway-pricing (US East: $0.045 per NAT gateway-hour, "
        "$0.005 per public IPv4 address-hour)",
        "2026-02-24",
    ),
    Source(
        "SVC-ENDPOINT",
        "AWS PrivateLink pricing, https://aws.amazon.com/privatelink/pricing/ (billed per endpoint per "
        "AZ-hour); the rate from egresscost.com, 'AWS NAT Gateway Costs: The $0.045/GB Tax', "
        "https://egresscost.com/nat-gateway ($7.20 per AZ-month)",
        "2026-03",
    ),
    Source(
        "SVC-FARGATE",
        "AWS Fargate pricing, https://aws.amazon.com/fargate/pricing/ (US East (N. Virginia), Linux/x86: "
        "$0.04048 per vCPU-hour, $0.004445 per GB-hour of memory, $0.000111 per GB-hour of ephemeral "
        "storage above the 20 GB included; billed per second, one-minute minimum), as quoted by Wring, "
        "'AWS Fargate Pricing: Serverless Container Costs', https://www.wring.co/blog/aws-fargate-pricing-guide, "
        "and Vantage, 'AWS Fargate Pricing Explained', https://www.vantage.sh/blog/fargate-pricing",
        "2026-03-10",
    ),
    Source(
        "SVC-ALB",
        "Elastic Load Balancing pricing, https://aws.amazon.com/elasticloadbalancing/pricing/ (US East "
        "(N. Virginia) $0.0225 per ALB-hour and $0.008 per LCU-hour, as quoted by cloud-horizons.com)",
        "2026-05-08",
    ),
    Source(
        "SVC-EFS",
        "factualminds.com, 'Amazon EFS Pricing: The Throughput Mode and Storage Class Decisions That "
        "Decide the Bill', https://www.factualminds.com/blog/amazon-efs-pricing-throughput-modes-storage-classes/ "
        "(us-east-1, June 2026: Standard $0.30/GB-month); also https://aws.amazon.com/efs/pricing/",
        "2026-06-13",
    ),
    Source(
        "SVC-S3",
        "zeonedge.com, 'Cloud Storage Cost Guide: S3, EBS, EFS, and FSx', "
        "https://zeonedge.com/blog/cloud-storage-cost-guide-s3-ebs-efs-fsx-choosing-right-tier "
        "(us-east-1 S3 Standard $0.023/GB-month)",
        "2026-04-09",
    ),
    Source(
        "SVC-KMS",
        "AWS KMS pricing, https://aws.amazon.com/kms/pricing/ ('Each AWS KMS key that you create in KMS "
        "costs $1/month'; each rotation adds $1/month, capped after the second since May 2024 per "
        "cloudburn.io 'AWS KMS Pricing', https://cloudburn.io/blog/aws-kms-pricing, 2026-03-14)",
        "2026-03-14",
    ),
    Source(
        "SVC-CW",
        "factualminds.com, 'Amazon CloudWatch Pricing: The 10 Billing Dimensions Behind Your Observability "
        "Bill', https://www.factualminds.com/blog/amazon-cloudwatch-pricing-metrics-logs-alarms-dashboards/ "
        "(dashboards $3 each per month); c3x.dev, 'aws_cloudwatch_metric_alarm cost estimation', "
        "https://c3x.dev/resources/aws/aws_cloudwatch_metric_alarm ($0.10 per standard alarm-month)",
        "2026-06-13",
    ),
    Source(
        "NXDI-TP",
        "aws-neuron/aws-neuron-sdk libraries/nxd-inference/developer_guides/feature-guide.rst @86a9286, "
        '"NxD Inference Features Configuration Guide", section "Tensor-parallelism support", '
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/developer_guides/"
        'feature-guide.html ("The Neuron runtime supports the following tensor-parallelism degrees: Trn2: '
        '1, 2, 4, 8, 16, 32, and 64 (with LNC2); Inf2: 1, 2, 4, 8, and 24; Trn1: 1, 2, 8, 16, and 32"; '
        "unchanged since @2086a70, 2024-12-03)",
        "2026-02-26",
    ),
    Source(
        "OPTN-NB",
        "huggingface/optimum-neuron notebooks/ec2/text-generation/CodeLlama-7B-Compilation.ipynb @8eafa20 "
        "(CodeLlama-7B fp16, precompiled for 2 cores, runs on inf2.xlarge; compile with num_cores=12 for "
        "inf2.24xlarge and 24 for inf2.48xlarge)",
        "2026-02-19",
    ),
    Source(
        "LMI-TNX",
        "deepjavalibrary/djl-serving serving/docs/lmi/tuning_guides/tnx_tuning_guide.md @0827345 (Llama-2 7B "
        "fp16, 14 GB, TP 2 on inf2.xlarge at batch 4 x 2,048; tested on Neuron 2.15)",
        "2024",
    ),
    Source(
        "HF-SM-LLAMA3",
        "dacorvo/deploy-inference-image-sagemaker deploy_snippet.py @0e336628 (Meta-Llama-3-8B on "
        "ml.inf2.xlarge, HF_NUM_CORES=2, batch 8, 4,096 tokens, the Hugging Face neuronx LLM image)",
        "2024-06-18",
    ),
    Source(
        "CFN-LINT",
        "aws-cloudformation/cfn-lint 1.58.0 (PyPI; the version requirements-dev.txt pins) "
        "src/cfnlint/data/schemas/extensions/aws_ec2_instance/instancetype_enum.json: the InstanceType values "
        "valid per Region, read 2026-12-01. Its earlier release v1.55.1 (@249ff3d, schemas of 2026-08-10) "
        "lists trn2.48xlarge in us-east-2 only",
        "2026-12-01",
    ),
    Source(
        "NXDT-CONF",
        "aws-neuron/neuronx-distributed-training examples/conf: hf_llama3_8B_config.yaml and "
        "hf_llama3_70B_config.yaml @9a145a8 (2025-05-20, trn1.32xlarge), hf_llama3_8B_trn2_config.yaml and "
        "hf_llama3_70B_trn2_config.yaml @d9a345e (2025-08-01, trn2.48xlarge at LNC 2), "
        "hf_llama3.1_405B_trn1_config.yaml @9a145a8 (64 x trn1.32xlarge, TP 32 PP 32, full recompute); all "
        "mixed precision, ZeRO-1, sequence parallel, flash attention, micro-batch 1, sequence 8,192; selective "
        "recompute of [CoreAttention] (8B trn1), [CoreAttention, LlamaMLP] (70B trn1), [LlamaRMSNorm, "
        "ActivationMultiplyMLP] (70B trn2), none (8B trn2), "
        "https://github.com/aws-neuron/neuronx-distributed-training/tree/main/examples/conf",
        "2025-08-01",
    ),
    Source(
        "NXDT-LLAMA",
        "aws-neuron/neuronx-distributed-training src/neuronx_distributed_training/models/hf_models/"
        "modeling_llama.py @9a145a8 and @9169aa0 (LlamaRMSNorm casts to get_cast_dtype(), FP32; LlamaMLP's "
        "fused gate_up_proj, ActivationMultiplyMLP = act_fn(gate) * up, down_proj; CoreAttention) and "
        "lightning_modules/model/hf_models/llama_model.py (activations_checkpoint_recompute names these "
        "modules), https://github.com/aws-neuron/neuronx-distributed-training",
        "2025-09-12",
    ),
    Source(
        "NXD-SMP",
        "aws-neuron/aws-neuron-sdk libraries/neuronx-distributed/standard_mixed_precision.rst @81ce03a "
        '("Use FP32 master weights and optimizer states for ZeRO-1 optimizer", "Use FP32 in local gradients '
        'accumulation") and archive/nxd-training/config_overview.rst (precision type mixed_precision "uses the '
        'zero1 optimizer ... and keeps the master copy of the weights in fp32")',
        "2026-08-21",
    ),
    Source(
        "ZERO",
        "Rajbhandari et al., 'ZeRO: Memory Optimizations Toward Training Trillion Parameter Models', SC20, "
        "https://arxiv.org/abs/1910.02054 (mixed-precision Adam holds 2 + 2 + 12 = 16 bytes per parameter; "
        "ZeRO stage 1 partitions the 12 bytes of optimizer state across the data-parallel ranks)",
        "2020-05-13",
    ),
    Source(
        "ACT-MEM",
        "Korthikanti et al., 'Reducing Activation Recomputation in Large Transformer Models', "
        "https://arxiv.org/abs/2205.05198 (activations per layer s*b*h*(34 + 5*a*s/h) bytes in 16-bit; tensor "
        "with sequence parallelism divides them by t; selective recomputation drops the 5*a*s/h attention "
        "term; with 1F1B the first pipeline stage holds the activations of L layers)",
        "2022-05-10",
    ),
    Source(
        "MODEL-SHAPES",
        "config.json of each reference model: aws-neuron/neuronx-distributed examples/training/llama/ "
        "tp_zero1_llama_hf_pretrain/8B_config_llama3.1, tp_pp_llama_hf_pretrain/70B_config_llama3.1 @c9ee222 "
        "and 13B_config_llama2 @a070deb; huggingface.co/meta-llama/Llama-3.2-1B, Llama-3.2-3B and "
        "Llama-3.1-405B config.json (hidden size, intermediate size, heads, KV heads, layers, vocabulary)",
        "2026-04-09",
    ),
    Source(
        "NEURON-TRAIN-PERF",
        "aws-neuron/aws-neuron-sdk about-neuron/benchmarks/trn1/training_data_decoder.csv @81ce03a, shown on "
        '"Trn1/Trn1n Training Performance" ("Last update: February 19th, 2026"), '
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/"
        "trn1-training-performance.html (rows measured with Neuron 2.24.0)",
        "2026-02-19",
    ),
    Source(
        "NEURON-INF-PERF",
        "aws-neuron/aws-neuron-sdk about-neuron/benchmarks/inf2/throughput_data_decoder.csv and "
        'trn1/throughput_data_decoder.csv @81ce03a, shown on "Inf2 Inference Performance" ("Last update: '
        'Feb 26th, 2026"), https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/'
        "inf2/inf2-performance.html (Transformers NeuronX rows measured with Neuron 2.18)",
        "2026-02-26",
    ),
    Source(
        "OPTN-BENCH",
        "huggingface/optimum-neuron docs/source/benchmarks/inferentia-llama3.3-70b.mdx and "
        'docs/assets/benchmarks/inferentia-llama3.3-70b/throughput.png @2bb1c70 (2025-07-10), "Llama-3.3-70b '
        'performance on AWS Inferentia2 (Latency & Throughput)", https://huggingface.co/docs/optimum-neuron/'
        "benchmarks/inferentia-llama3.3-70b: DeepSeek-R1-Distill-Llama-70B (the Llama 3.3 70B architecture), "
        "bf16, 24 cores of an inf2.48xlarge, batch 1 / 4 / 8, sequence length 4,096; generated tokens per "
        "second end to end, as the chart labels them; run by benchmark/text-generation/performance/"
        "llama3.3-70b.py and benchmark.py at the same commit (256 new tokens after 256 to 1,792 input "
        "tokens) with optimum-neuron 0.3.0.dev5 on Neuron SDK 2.24.0, its NxD-based inference backend",
        "2025-07-10",
    ),
    Source(
        "TNX-EOS",
        "aws-neuron/aws-neuron-sdk release-notes/prev/2.25.0/index.rst @81ce03a (Neuron 2.25.0, 2025-07-31: "
        '"In Neuron Release 2.26, Neuron will end support for transformers-neuronx ... advised to migrate to '
        'NeuronX Distributed Inference") and release-notes/prev/2.26.0/index.rst (2025-09-18: "End-of-support '
        'for the Transformers NeuronX library starts with the 2.26.0 release"), '
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/release-notes/prev/2.26.0/index.html",
        "2025-09-18",
    ),
    Source(
        "NEMO-PERF",
        'NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md @00b7660, section "25.11 NeMo Container", '
        "System: DGX-H100 (8 x H100 80GB per node), https://docs.nvidia.com/nemo/megatron-bridge/latest/"
        "performance-summary.html",
        "2025-11",
    ),
    Source(
        "NIM-PERF",
        'NVIDIA NIM LLMs Benchmarking, "Performance", https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/'
        "performance.md (Llama-3.3-70b-instruct, NIM 1.8.0, 2 x H100 80G, fp8 TP2, 500 input / 2,000 output "
        "tokens; site last updated 2026-07-20)",
        "2026-07-20",
    ),
    Source(
        "NRT-H",
        "aws-neuron/aws-neuron-sdk src/libnrt/include/nrt/nrt.h @86a9286 (instance families NRT_INSTANCE_TRN3 = "
        "14 and NRT_INSTANCE_TRN3PDS98 = 15); deploy/eks/ultraserver-operator.rst @ee7d6e00, 2026-07-07 "
        '("Trn3pds instance type for the UltraServer nodes", topologySize "1, 2, or 4")',
        "2026-07-07",
    ),
    Source(
        "MNP-SPOT",
        "https://docs.aws.amazon.com/batch/latest/userguide/mnp-ce.html (AWS Batch multi-node parallel jobs "
        "are not supported on Spot compute environments)",
        "2026-12-01",
    ),
    Source(
        "NEURON-DRIVER-SHARED",
        "aws-neuron/aws-neuron-driver share/neuron_driver_shared.h @6bbfbe2 (UltraServer modes X4, X2H, X2V "
        "and X1: 4-, 2- and 1-node configurations)",
        "2026-12-01",
    ),
)
"""Every source, once: a key names one citation (a test holds them unique)."""
SOURCES: dict[str, Source] = {s.key: s for s in SOURCE_LIST}


# --------------------------------------------------------------------------------------------
# Instances
# --------------------------------------------------------------------------------------------

# Inferentia2 / Trainium NeuronCore-v2 has 16 GiB of HBM per core (32 GiB per chip, 2 cores). TGI-DOC
# states the serving rule as "16GB per neuron core"; INF2-ARCH gives 32 GiB per chip.
HBM_GIB_PER_NEURONCORE_V2 = 16.0


@dataclass(frozen=True)
class NeuronInstance:
    """Facts about one Neuron instance type. Derived values are properties.

    ``unknown`` names the facts no source publishes (their fields hold placeholders the constructs
    refuse to use; :meth:`with_facts` supplies them); ``weak`` names the facts the catalog holds from
    a source that does not settle them (Trn3: the instance type name and how many servers share a
    NeuronLink domain, :data:`TRN3_EVIDENCE`), which :meth:`with_facts` may replace; ``in_ec2_model``
    is False where the EC2 API model lists no such type (Trn3, source EC2-MODEL), so tools built on
    it (cfn-lint) do not know it.

    ``neuron_cores`` is the number of *logical* NeuronCores the runtime exposes at the default
    logical-NeuronCore configuration (LNC). On trn2 the default LNC is 2, so two physical
    NeuronCore-v3 form one logical core: trn2.48xlarge exposes 64 cores (128 at LNC=1). Use
    :meth:`neuron_cores_at` for the other setting. LNC applies only to Trn2 (source LNC).
    """

    name: str
    family: Family
    chip: str
    chips: int
    physical_neuron_cores: int
    hbm_gib: int
    vcpus: int
    memory_gib: int
    network_cards: int
    max_interfaces_per_card: int
    efa_interfaces: int
    efa_gbps: int
    nvme_gb: int
    neuronlink_domain_instances: int = 1
    default_logical_nc_config: int | None = None
    sources: tuple[str, ...] = ()
    ultraserver: str | None = None
    interconnect: str = ""
    unknown: tuple[str, ...] = ()
    catalog_key: str = ""
    in_ec2_model: bool = True
    weak: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The catalog entry this instance was read from (its name unless :meth:`with_facts` renamed it)."""
        return self.catalog_key or self.name

    @property
    def domain_chips(self) -> int:
        """Chips in one NeuronLink / NeuronSwitch scale-up domain (one instance, or one UltraServer)."""
        return self.chips * self.neuronlink_domain_instances

    def is_known(self, fact: str) -> bool:
        """False when no source publishes ``fact`` (a field name) for this type: see :attr:`unknown`."""
        return fact not in self.unknown

    def require_known(self, *facts: str, field: str = "instance_type", purpose: str = "this") -> None:
        """Refuse ``purpose`` when a fact it needs is not published (the catalog never guesses)."""
        missing = [f for f in facts if f in self.unknown]
        if missing:
            raise NeuronConfigError(
                field,
                self.name,
                f"{purpose} needs {', '.join(missing)} of {self.name}, which no source publishes (unknown, "
                f"looked {UNKNOWN_LOOKED}); read them from `aws ec2 describe-instance-types --instance-types "
                f"<type>` in your account and pass catalog.get_instance({self.key!r}).with_facts(...)",
            )

    def with_facts(self, *, source: str, name: str | None = None, **facts: int) -> NeuronInstance:
        """This instance with facts the catalog lacks filled in from your own account, e.g.
        ``with_facts(source="describe-instance-types us-east-2 2026-12-01", network_cards=16,
        max_interfaces_per_card=2, efa_interfaces=16, nvme_gb=7600)``.

        ``name``: the EC2 instance type name where the catalog has none or only a weak one (every Trn3
        entry: ``with_facts(name="trn3p.48xlarge", neuronlink_domain_instances=2, source=...)``). Only
        the facts listed in :attr:`unknown` or :attr:`weak` may be given; ``source`` says where they
        come from and is kept in :attr:`sources`.
        """
        if not isinstance(source, str) or not source.strip():
            raise NeuronConfigError("source", source, "say where the facts come from")
        allowed = {f for f in (*self.unknown, *self.weak) if f != "name"}
        for fact, value in facts.items():
            if fact not in allowed:
                raise NeuronConfigError(
                    fact,
                    value,
                    "only facts the catalog lacks or holds from a weak source may be given: "
                    f"{one_of(sorted(allowed))}",
                )
            if fact == "default_logical_nc_config":
                validation.choice(fact, value, (1, 2))
            else:
                validation.whole_number(
                    fact, value, minimum=1 if fact == "neuronlink_domain_instances" else 0
                )
        if name is not None:
            if "name" not in self.unknown and "name" not in self.weak:
                raise NeuronConfigError("name", name, f"{self.name} is already EC2's name for this type")
            if not isinstance(name, str) or not _INSTANCE_TYPE_NAME.fullmatch(name):
                raise NeuronConfigError("name", name, "give an EC2 instance type name, e.g. trn3.48xlarge")
        left = tuple(f for f in self.unknown if f not in facts and not (f == "name" and name))
        given: dict[str, Any] = dict(facts)
        return replace(
            self,
            name=name or self.name,
            catalog_key=self.key,
            unknown=left,
            sources=(*self.sources, f"given: {source}"),
            **given,
        )

    @property
    def neuron_cores(self) -> int:
        """Logical NeuronCores at the default LNC (all physical cores where LNC does not apply)."""
        return self.neuron_cores_at(self.default_logical_nc_config)

    @property
    def supports_logical_nc_config(self) -> bool:
        return self.default_logical_nc_config is not None

    def neuron_cores_at(self, logical_nc_config: int | None) -> int:
        """Logical NeuronCores exposed at ``logical_nc_config`` (1 or 2; Trn2 and Trn3 only).

        ``None`` means the instance's default (2 on trn2; every physical core elsewhere).
        """
        if logical_nc_config is None:
            logical_nc_config = self.default_logical_nc_config or 1
        # bool is an int and 2.0 == 2: both would slip through the range check below and make
        # core counts booleans or floats downstream.
        if isinstance(logical_nc_config, bool) or not isinstance(logical_nc_config, int):
            raise NeuronConfigError(
                "logical_nc_config", logical_nc_config, "must be the integer 1 or 2 (Trn2 and Trn3 only)"
            )
        if not self.supports_logical_nc_config and logical_nc_config != 1:
            raise NeuronConfigError(
                "logical_nc_config",
                logical_nc_config,
                f"{self.name} has no logical NeuronCore setting (LNC applies only to Trn2 and Trn3); leave it unset",
            )
        if logical_nc_config not in (1, 2):
            raise NeuronConfigError("logical_nc_config", logical_nc_config, "valid values are 1 and 2")
        return self.physical_neuron_cores // logical_nc_config

    @property
    def hbm_gib_per_core(self) -> float:
        """Device memory per logical NeuronCore at the default LNC."""
        return self.hbm_gib / self.neuron_cores

    def hbm_gib_per_core_at(self, logical_nc_config: int | None) -> float:
        """Device memory per logical NeuronCore at ``logical_nc_config`` (trn2: 24 GiB at LNC=2, 12 at 1)."""
        return self.hbm_gib / self.neuron_cores_at(logical_nc_config)

    @property
    def neuron_devices(self) -> tuple[str, ...]:
        """One ``/dev/neuronN`` per chip: what a container must be given."""
        return tuple(f"/dev/neuron{i}" for i in range(self.chips))

    @property
    def efa_devices(self) -> tuple[str, ...]:
        """One ``/dev/infiniband/uverbsN`` per EFA interface.

        The same in both :class:`EfaLayout` layouts: an ``efa-only`` interface exposes an EFA device
        just like an ``efa`` one, and the ENA primary of the ENA-primary layout exposes none, so
        either layout yields ``efa_interfaces`` devices.
        """
        return tuple(f"/dev/infiniband/uverbs{i}" for i in range(self.efa_interfaces))

    @property
    def supports_efa(self) -> bool:
        return self.efa_interfaces > 0 or (not self.is_known("efa_interfaces") and self.efa_gbps > 0)

    @property
    def is_training(self) -> bool:
        return self.family == "training"

    @property
    def is_ultraserver(self) -> bool:
        return self.neuronlink_domain_instances > 1

    @property
    def purchase_options(self) -> PurchaseOptions:
        """How EC2 sells this type (:data:`PURCHASE_OPTIONS`)."""
        return PURCHASE_OPTIONS[self.key]

    @property
    def ultraserver_type(self) -> UltraServerType | None:
        """The UltraServer this type is a server of (:data:`ULTRASERVERS`), else None; with the server
        count :meth:`with_facts` gave, where it replaced the catalog's."""
        if not self.ultraserver:
            return None
        ultra = ULTRASERVERS[self.ultraserver]
        if ultra.servers == self.neuronlink_domain_instances:
            return ultra
        return replace(ultra, servers=self.neuronlink_domain_instances)

    @property
    def capacity_block(self) -> bool:
        """Whether EC2 sells this type as a Capacity Block of either kind (instance or UltraServer)."""
        return self.purchase_options.capacity_block_kind is not None


def _trn(name: str, **kw: Any) -> NeuronInstance:
    return NeuronInstance(name=name, family="training", **kw)


def _inf2(name: str, **kw: Any) -> NeuronInstance:
    return NeuronInstance(
        name=name,
        family="inference",
        chip="inferentia2",
        network_cards=1,
        efa_interfaces=0,
        efa_gbps=0,
        nvme_gb=0,
        sources=("INF2-ARCH", "MOTO"),
        **kw,
    )


# Chips, cores, HBM, vCPU and memory: TRN1-ARCH, TRN2-ARCH, INF2-ARCH. Network cards, interfaces per
# card, EFA counts, NVMe and usage classes: MOTO. EFA bandwidth: TRN1-ARCH (800 / 1,600 Gbps) and
# TRN2-ARCH (3,200 Gbps).
# Sources disagree:
# - trn1.2xlarge EFA: TRN1-ARCH says "up to 25 Gbps" EFA; MOTO and EFA-SETUP say no EFA. We follow
#   MOTO/EFA-SETUP (0 interfaces), so multi-node trn1.2xlarge is refused.
# - trn2 HBM: MOTO's NeuronInfo reports 512 GiB per device; TRN2-ARCH gives 96 GiB per chip
#   (1,536 GiB per instance). We follow TRN2-ARCH.
# - trn2 NVMe: TRN2-ARCH 4 x 1.92 TB, MOTO 4 x 1,900 GB. We use MOTO's 7,600 GB.
_TRN1_2XLARGE = _trn(
    "trn1.2xlarge",
    chip="trainium",
    chips=1,
    physical_neuron_cores=2,
    hbm_gib=32,
    vcpus=8,
    memory_gib=32,
    network_cards=1,
    max_interfaces_per_card=4,
    efa_interfaces=0,
    efa_gbps=0,
    nvme_gb=474,
    sources=("TRN1-ARCH", "MOTO", "EFA-SETUP"),
)
_TRN1_32XLARGE = _trn(
    "trn1.32xlarge",
    chip="trainium",
    chips=16,
    physical_neuron_cores=32,
    hbm_gib=512,
    vcpus=128,
    memory_gib=512,
    network_cards=8,
    max_interfaces_per_card=5,
    efa_interfaces=8,
    efa_gbps=800,
    nvme_gb=7600,
    sources=("TRN1-ARCH", "MOTO", "CB-DOC"),
)
# trn1n.32xlarge: trn1.32xlarge's chips and host with twice the network (16 cards, 1,600 Gbps EFA);
# not sold as Capacity Blocks (MOTO usage classes).
_TRN1N_32XLARGE = replace(
    _TRN1_32XLARGE,
    name="trn1n.32xlarge",
    network_cards=16,
    efa_interfaces=16,
    efa_gbps=1600,
    sources=("TRN1-ARCH", "MOTO"),
)
_TRN2_48XLARGE = _trn(
    "trn2.48xlarge",
    chip="trainium2",
    chips=16,
    physical_neuron_cores=128,
    hbm_gib=1536,
    vcpus=192,
    memory_gib=2048,
    network_cards=16,
    max_interfaces_per_card=2,
    efa_interfaces=16,
    efa_gbps=3200,
    nvme_gb=7600,
    default_logical_nc_config=2,
    sources=("TRN2-ARCH", "LNC", "MOTO", "CB-DOC"),
)
# trn2u.48xlarge: the same instance sold as part of a Trn2 UltraServer, where four instances
# (64 chips) share one NeuronLink-v3 domain (TRN2-ARCH). It is sold as Trn2 UltraServer Capacity
# Blocks (CB-HOW); our sources give it no AZ offerings and no On-Demand price (PURCHASE_OPTIONS).
_TRN2U_48XLARGE = replace(
    _TRN2_48XLARGE,
    name="trn2u.48xlarge",
    neuronlink_domain_instances=4,
    sources=("TRN2-ARCH", "LNC", "CB-HOW"),
    ultraserver="trn2",
)
# trn2.3xlarge: one Trainium2 (8 physical NeuronCore-v3, 4 logical at the default LNC=2), in the EC2
# API model (EC2-MODEL) and DescribeInstanceTypes (MOTO-525): 12 vCPUs, 128 GiB, one network card
# with two interfaces and one EFA, 470 GB NVMe, "200 Gigabit" network performance.
_TRN2_3XLARGE = replace(
    _TRN2_48XLARGE,
    name="trn2.3xlarge",
    chips=1,
    physical_neuron_cores=8,
    hbm_gib=96,
    vcpus=12,
    memory_gib=128,
    network_cards=1,
    max_interfaces_per_card=2,
    efa_interfaces=1,
    efa_gbps=200,
    nvme_gb=470,
    sources=("TRN2-ARCH", "LNC", "EC2-MODEL", "MOTO-525"),
)
# NeuronLink generations of the earlier types (TRN1-ARCH, TRN2-ARCH).
_TRN1_32XLARGE = replace(_TRN1_32XLARGE, interconnect="NeuronLink-v2")
_TRN1N_32XLARGE = replace(_TRN1N_32XLARGE, interconnect="NeuronLink-v2")
_TRN2_48XLARGE = replace(_TRN2_48XLARGE, interconnect="NeuronLink-v3")
_TRN2U_48XLARGE = replace(_TRN2U_48XLARGE, interconnect="NeuronLink-v3")

# Trn3 (TRN3-ARCH): sold in UltraServers only. Per server, the UltraServer totals of TRN3-ARCH's
# table divided by its servers (Gen1: 768 vCPUs, 8,192 GiB, 12,800 Gbps EFA over 4 servers; Gen2:
# 2,304 vCPUs, 27,648 GiB, 28,800 Gbps over 36); chips x 8 NeuronCore-v4 and 144 GiB each
# (TRAINIUM3). The EC2 API model has no Trn3 type (EC2-MODEL, looked 2026-12-01). The Gen1 server's
# name is one of several the Neuron driver knows (NEURON-DRIVER; TRN3_EVIDENCE records what each
# source says), and the Gen2 server's is unpublished: both names, and how many servers share one
# NeuronLink domain, are `weak` facts `with_facts(...)` replaces. No source we could read gives
# network cards, interfaces per card, EFA interfaces or instance store, nor the default LNC (LNC says
# only that LNC applies to Trn3): those are "unknown" (UNKNOWN_LOOKED) and the constructs refuse what
# needs them until `with_facts(...)` supplies them from your account.
UNKNOWN_LOOKED = "2026-12-01"
_TRN3_UNKNOWN = (
    "network_cards",
    "max_interfaces_per_card",
    "efa_interfaces",
    "nvme_gb",
    "default_logical_nc_config",
)
_TRN3_48XLARGE = _trn(
    "trn3.48xlarge",
    chip="trainium3",
    chips=16,
    physical_neuron_cores=128,
    hbm_gib=16 * 144,
    vcpus=192,
    memory_gib=2048,
    network_cards=0,
    max_interfaces_per_card=0,
    efa_interfaces=0,
    efa_gbps=3200,
    nvme_gb=0,
    neuronlink_domain_instances=4,
    default_logical_nc_config=2,
    sources=("TRN3-ARCH", "TRAINIUM3", "TRN3-TUTORIAL", "NEURON-DRIVER", "EC2-MODEL"),
    ultraserver="trn3-gen1",
    interconnect="NeuronLink-v4 + NeuronSwitch-v1",
    unknown=_TRN3_UNKNOWN,
    in_ec2_model=False,
    weak=("name", "neuronlink_domain_instances"),
)
_TRN3_GEN2_SERVER = replace(
    _TRN3_48XLARGE,
    name="trn3-gen2-server",
    chips=4,
    physical_neuron_cores=32,
    hbm_gib=4 * 144,
    vcpus=64,
    memory_gib=768,
    efa_gbps=800,
    neuronlink_domain_instances=36,
    sources=("TRN3-ARCH", "TRAINIUM3", "NEURON-DRIVER", "EC2-MODEL"),
    ultraserver="trn3-gen2",
    unknown=("name", *_TRN3_UNKNOWN),
    weak=("neuronlink_domain_instances",),
)


@dataclass(frozen=True)
class Evidence:
    """What one source says about a name or configuration, and what the catalog does with it."""

    subject: str
    source: str
    says: str
    catalog_use: str


# Every Trainium3 instance-type name and UltraServer configuration we found, by source (looked
# 2026-12-01). None is in the EC2 API model, so every Trn3 name is a `weak` fact users may replace.
TRN3_EVIDENCE: tuple[Evidence, ...] = (
    Evidence("trn3.48xlarge", "NEURON-DRIVER", "16-device PDS platform", "the Gen1 server's default name"),
    Evidence(
        "trn3p.48xlarge",
        "NEURON-DRIVER",
        "ULTRASERVER platform: the driver runs UltraServer pod election, as on trn2u.48xlarge",
        "not used: no source says which UltraServer it belongs to; give it with with_facts(name=...)",
    ),
    Evidence(
        "trn3e.24xlarge",
        "NEURON-DRIVER",
        "MAX platform, whose device table has 4 entries (4 Trainium3 per server, as a Gen2 server)",
        "not used: no source names it the Gen2 server; give it with with_facts(name=...)",
    ),
    Evidence(
        "trn3sn.48xlarge, trn3s-es.48xlarge, trn3-dev0/dev1.48xlarge",
        "NEURON-DRIVER",
        "PDS platform (16 devices), like trn3.48xlarge",
        "not catalogued (engineering-sample and development names)",
    ),
    Evidence(
        "trn3pd98.3xlarge, trn3s-es.3xlarge, trn3sn.3xlarge, trn3sn-es.3xlarge",
        "NEURON-DRIVER",
        'one-device "3xl" instance types',
        "not catalogued: no size, price or offering is published",
    ),
    Evidence(
        "TRN3 / TRN3PDS98 (trn3pds)",
        "NRT-H",
        'runtime instance families 14 and 15; the EKS UltraServer operator runs on "Trn3pds" types',
        "no EC2 type name: recorded only",
    ),
    Evidence(
        "trn3u",
        "NRT-H",
        "a framework alias of runtime family TRN3PDS98 that we could not trace to a citable file; neither "
        "nrt.h nor the driver names it",
        "not catalogued",
    ),
    Evidence(
        "Gen1 UltraServer: 4 servers x 16 chips",
        "TRN3-ARCH",
        "one NeuronLink-v4 / NeuronSwitch-v1 domain of 64 chips",
        "trn3.48xlarge.neuronlink_domain_instances = 4",
    ),
    Evidence(
        "Gen2 UltraServer: 36 servers x 4 chips",
        "TRN3-ARCH",
        "one domain of 144 chips",
        "trn3-gen2-server.neuronlink_domain_instances = 36",
    ),
    Evidence(
        "UltraServer node configurations 1, 2, 4",
        "NEURON-DRIVER-SHARED",
        "driver modes X1, X2H, X2V, X4; the EKS operator's topologySize is 1, 2 or 4 (NRT-H)",
        "a smaller domain is given with with_facts(neuronlink_domain_instances=...)",
    ),
    Evidence(
        "Gen2 configurations of 16 and 18 nodes",
        "NEURON-DRIVER-SHARED",
        "not named by any source we read (the driver modes stop at 4 nodes)",
        "not catalogued; give the domain size with with_facts(neuronlink_domain_instances=...)",
    ),
)


@dataclass(frozen=True)
class UltraServerType:
    """One UltraServer configuration: servers joined into one scale-up (NeuronLink) domain.

    ``instance_type`` is the catalog key of its servers; ``interconnect`` what joins them.
    """

    key: str
    name: str
    instance_type: str
    servers: int
    chips_per_server: int
    interconnect: str
    efa_gbps: int
    sources: tuple[str, ...]

    @property
    def chips(self) -> int:
        return self.servers * self.chips_per_server


# TRN2-ARCH: a Trn2 UltraServer is four trn2u.48xlarge over NeuronLink-v3 (64 chips). TRN3-ARCH: Gen1
# is 4 servers x 16 Trainium3 (64 chips), Gen2 36 x 4 (144 chips), both all-to-all over NeuronLink-v4
# and NeuronSwitch-v1; EFA 12,800 and 28,800 Gbps per UltraServer. Sources disagree on the Trn2
# UltraServer's EFA: TRN2-ARCH's table gives 3,200 Gbps in its "Trn2 UltraServer" column, the same
# figure as one trn2u.48xlarge, although the column's other rows are four times an instance's (vCPUs,
# memory, PFLOPS). The catalog carries the table's 3,200 (each trn2u.48xlarge still has 3,200).
ULTRASERVERS: dict[str, UltraServerType] = {
    u.key: u
    for u in (
        UltraServerType("trn2", "Trn2 UltraServer", "trn2u.48xlarge", 4, 16, "NeuronLink-v3", 3200, ("TRN2-ARCH",)),
        UltraServerType(
            "trn3-gen1", "Trn3 Gen1 UltraServer", "trn3.48xlarge", 4, 16, "NeuronLink-v4 + NeuronSwitch-v1", 12800,
            ("TRN3-ARCH",),
        ),
        UltraServerType(
            "trn3-gen2", "Trn3 Gen2 UltraServer", "trn3-gen2-server", 36, 4, "NeuronLink-v4 + NeuronSwitch-v1",
            28800, ("TRN3-ARCH",),
        ),
    )
}  # fmt: skip

INSTANCES: dict[str, NeuronInstance] = {
    i.name: i
    for i in (
        _TRN1_2XLARGE,
        _TRN1_32XLARGE,
        _TRN1N_32XLARGE,
        _TRN2_3XLARGE,
        _TRN2_48XLARGE,
        _TRN2U_48XLARGE,
        _TRN3_48XLARGE,
        _TRN3_GEN2_SERVER,
        _inf2("inf2.xlarge", chips=1, physical_neuron_cores=2, hbm_gib=32, vcpus=4, memory_gib=16,
              max_interfaces_per_card=4),
        _inf2("inf2.8xlarge", chips=1, physical_neuron_cores=2, hbm_gib=32, vcpus=32, memory_gib=128,
              max_interfaces_per_card=8),
        _inf2("inf2.24xlarge", chips=6, physical_neuron_cores=12, hbm_gib=192, vcpus=96, memory_gib=384,
              max_interfaces_per_card=15),
        _inf2("inf2.48xlarge", chips=12, physical_neuron_cores=24, hbm_gib=384, vcpus=192, memory_gib=768,
              max_interfaces_per_card=15),
    )
}  # fmt: skip


def known_instances(family: Family | None = None) -> tuple[str, ...]:
    """Names of catalogued instances, optionally of one family, in catalog order."""
    return tuple(n for n, i in INSTANCES.items() if family is None or i.family == family)


_INSTANCE_TYPE_NAME = re.compile(r"[a-z][a-z0-9-]*\.[0-9]*[a-z]+")


def get_instance(name: str | NeuronInstance, *, field: str = "instance_type") -> NeuronInstance:
    """Look up an instance type; an unknown name raises :class:`NeuronConfigError` listing the known ones.

    A :class:`NeuronInstance` (e.g. one completed with :meth:`NeuronInstance.with_facts`) is returned as is.
    """
    if isinstance(name, NeuronInstance):
        return name
    if isinstance(name, str):
        normalized = name.removeprefix("ml.")
        if normalized in INSTANCES:
            return INSTANCES[normalized]
    raise NeuronConfigError(field, name, f"not a Neuron instance type; known types: {one_of(INSTANCES)}")


def get_training_instance(name: str | NeuronInstance, *, field: str = "instance_type") -> NeuronInstance:
    instance = get_instance(name, field=field)
    if not instance.is_training:
        raise NeuronConfigError(
            field,
            name,
            f"{name} is an Inferentia2 (inference) instance; training needs Trainium: "
            f"{one_of(known_instances('training'))}",
        )
    return instance


def get_inference_instance(name: str | NeuronInstance, *, field: str = "instance_type") -> NeuronInstance:
    """Any Neuron instance can serve (Inf2 is built for it; Trn also runs Neuron inference)."""
    return get_instance(name, field=field)


# --------------------------------------------------------------------------------------------
# Tensor-parallel degrees for training, per instance and logical NeuronCore config
# --------------------------------------------------------------------------------------------

# TP degrees whose groups neuronx-distributed and the Neuron runtime are documented to form inside
# one instance; keyed by instance, then by LNC (None where LNC does not apply). TP 1 forms no
# tensor-parallel group at all, so it is valid everywhere. Every listed degree divides the
# instance's cores, so no listed TP group straddles instances.
# - trn1/trn1n: 2, 8 and 32 (TP-APPNOTE, runtime support); 4 on adjacent cores (RT-2.21).
#   16 is in no source: unlisted, not known broken.
# - trn2/trn2u at LNC=1 (128 cores): TP 128, 32, 8, 4 work and 64 works with Logic2; 16 (16 x 8
#   groups) is "not supported" (NXD-PS). At LNC=2 (64 cores): 64, 16, 4 work and 32 with Logic2;
#   8 (8 x 8 groups) is "not supported" (NXD-PS). TP 2 is in no source.
# - trn1.2xlarge (2 cores): 2 (TP-APPNOTE).
_TRN2_TP: dict[int | None, tuple[int, ...]] = {1: (1, 4, 8, 32, 64, 128), 2: (1, 4, 16, 32, 64)}
# - trn2.3xlarge (8 physical cores, one chip): no source gives a TP degree; only 1.
# - Trn3 servers: TP 8 at LNC=2 is run by NxD Inference on a Trn3 instance (TRN3-TUTORIAL); no source
#   documents another degree, nor training TP on Trn3 (looked 2026-12-01): the rest needs
#   allow_unlisted_tp, including every TP that spans servers of an UltraServer.
_TRN3_TP: dict[int | None, tuple[int, ...]] = {1: (1,), 2: (1, 8)}
TRAINING_TP_DEGREES: dict[str, dict[int | None, tuple[int, ...]]] = {
    "trn1.2xlarge": {None: (1, 2)},
    "trn1.32xlarge": {None: (1, 2, 4, 8, 32)},
    "trn1n.32xlarge": {None: (1, 2, 4, 8, 32)},
    "trn2.3xlarge": {1: (1,), 2: (1,)},
    "trn2.48xlarge": _TRN2_TP,
    "trn2u.48xlarge": _TRN2_TP,
    "trn3.48xlarge": _TRN3_TP,
    "trn3-gen2-server": _TRN3_TP,
}
# Degrees a source says do not work: refused even when unlisted degrees are allowed.
_TRN2_BROKEN_TP: dict[int | None, tuple[int, ...]] = {1: (16,), 2: (8,)}
TRAINING_TP_UNSUPPORTED: dict[str, dict[int | None, tuple[int, ...]]] = {
    "trn2.48xlarge": _TRN2_BROKEN_TP,
    "trn2u.48xlarge": _TRN2_BROKEN_TP,
}
TRAINING_TP_SOURCES = ("TP-APPNOTE", "RT-2.21", "NXD-PS", "TRN3-TUTORIAL")


def training_tp_degrees(
    instance_name: str | NeuronInstance, logical_nc_config: int | None = None
) -> tuple[int, ...]:
    """Documented training TP degrees on ``instance_name`` at ``logical_nc_config`` (default LNC)."""
    inst = get_training_instance(instance_name)
    lnc = inst.default_logical_nc_config if logical_nc_config is None else logical_nc_config
    inst.neuron_cores_at(lnc)  # validates the LNC
    return TRAINING_TP_DEGREES[inst.key][lnc]


def training_tp_unsupported(
    instance_name: str | NeuronInstance, logical_nc_config: int | None = None
) -> tuple[int, ...]:
    """Training TP degrees a source says do not work on ``instance_name`` at ``logical_nc_config``."""
    inst = get_training_instance(instance_name)
    lnc = inst.default_logical_nc_config if logical_nc_config is None else logical_nc_config
    return TRAINING_TP_UNSUPPORTED.get(inst.key, {}).get(lnc, ())


# --------------------------------------------------------------------------------------------
# Tensor-parallel degrees for inference, per family, from the runtime's own documentation
# --------------------------------------------------------------------------------------------

# NXDI-TP lists the degrees the Neuron runtime supports for inference: Trn1 1, 2, 8, 16, 32; Inf2 1,
# 2, 4, 8, 24; Trn2 at LNC 2 1, 2, 4, 8, 16, 32, 64. A degree larger than an instance's cores is
# left out where the list is applied (size_model). Sources disagree on Inf2 TP 12: TP-APPNOTE lists
# it ("2, 4, 8, 12 and 24 on Inf2") and OPTN-NB compiles with num_cores=12 for inf2.24xlarge, while
# NXDI-TP does not list it; published deployments use it, so it stays, and a plan at TP 12 says so.
# No source lists an inference degree for Trn2 at LNC 1; Trn3: TP 8 at LNC 2 (TRN3-TUTORIAL) only.
_INF2_SERVING_TP: dict[int | None, tuple[int, ...]] = {None: (1, 2, 4, 8, 12, 24)}
_TRN1_SERVING_TP: dict[int | None, tuple[int, ...]] = {None: (1, 2, 8, 16, 32)}
_TRN2_SERVING_TP: dict[int | None, tuple[int, ...]] = {1: (), 2: (1, 2, 4, 8, 16, 32, 64)}
INFERENCE_TP_DEGREES: dict[str, dict[int | None, tuple[int, ...]]] = {
    "trn1.2xlarge": _TRN1_SERVING_TP,
    "trn1.32xlarge": _TRN1_SERVING_TP,
    "trn1n.32xlarge": _TRN1_SERVING_TP,
    "trn2.3xlarge": _TRN2_SERVING_TP,
    "trn2.48xlarge": _TRN2_SERVING_TP,
    "trn2u.48xlarge": _TRN2_SERVING_TP,
    "trn3.48xlarge": {1: (), 2: (1, 8)},
    "trn3-gen2-server": {1: (), 2: (1, 8)},
    "inf2.xlarge": _INF2_SERVING_TP,
    "inf2.8xlarge": _INF2_SERVING_TP,
    "inf2.24xlarge": _INF2_SERVING_TP,
    "inf2.48xlarge": _INF2_SERVING_TP,
}
INFERENCE_TP_SOURCES = ("NXDI-TP", "TP-APPNOTE", "OPTN-NB", "TRN3-TUTORIAL")

# Where the training sources (TRAINING_TP_SOURCES) and the inference sources disagree about one
# degree, keyed by chip, LNC (None where LNC does not apply) and TP. Both planners quote the entry
# when they refuse that degree, so a user refused on one side learns the other side allows it.
TP_DISAGREEMENTS: dict[tuple[str, int | None, int], str] = {
    ("trainium", None, 4): (
        "the training runtime forms TP 4 on adjacent trn1 cores (RT-2.21), but NxD Inference does not list TP 4 "
        "for Trn1 (NXDI-TP)"
    ),
    ("trainium", None, 16): (
        "NxD Inference lists TP 16 for Trn1 (NXDI-TP), but no training source does (TP-APPNOTE, RT-2.21)"
    ),
    ("trainium2", 2, 2): "NxD Inference lists TP 2 for Trn2 at LNC 2 (NXDI-TP), but no training source does",
    ("trainium2", 2, 8): (
        "NxD Inference lists TP 8 for Trn2 at LNC 2 (NXDI-TP), but neuronx-distributed cannot form TP 8 "
        "training groups at LNC 2 (NXD-PS)"
    ),
    ("inferentia2", None, 12): (
        "TP-APPNOTE and optimum-neuron (OPTN-NB) use TP 12 on Inf2, but NxD Inference does not list it (NXDI-TP)"
    ),
}


def inference_tp_degrees(instance_name: str | NeuronInstance) -> tuple[int, ...]:
    """Inference TP degrees the runtime supports on ``instance_name`` at its default LNC, up to its cores."""
    inst = get_instance(instance_name)
    listed = INFERENCE_TP_DEGREES[inst.key][inst.default_logical_nc_config]
    return tuple(tp for tp in listed if tp <= inst.neuron_cores)


def tp_disagreement(
    instance_name: str | NeuronInstance, logical_nc_config: int | None, tp: int
) -> str | None:
    """What the training and inference sources say differently about ``tp`` on this chip, or None."""
    inst = get_instance(instance_name)
    lnc = inst.default_logical_nc_config if logical_nc_config is None else logical_nc_config
    return TP_DISAGREEMENTS.get((inst.chip, lnc, tp))


# --------------------------------------------------------------------------------------------
# Purchase options: how EC2 sells each type
# --------------------------------------------------------------------------------------------

Sold = Literal["yes", "no", "unknown"]
CapacityBlockKind = Literal["instance", "ultraserver"]


@dataclass(frozen=True)
class PurchaseOptions:
    """Which EC2 purchase options exist for one instance type, with the sources that say so.

    ``"unknown"`` means no source we could read says either way (looked 2026-12-01); the library
    refuses only what a source says is not sold (``"no"``), and ``cdk-neuron preflight`` checks the
    live account.

    - ``on_demand``: On-Demand instances (MOTO usage class ``on-demand``).
    - ``reservation``: On-Demand Capacity Reservations, by id or resource group (ODCR).
    - ``capacity_block``: *instance* Capacity Blocks for ML, bought by instance count (CB-DOC).
    - ``ultraserver_capacity_block``: *UltraServer* Capacity Blocks, bought by UltraServer count;
      every instance of the block belongs to one UltraServer (CB-HOW, CB-API).

    Both kinds of Capacity Block are used the same way: instances launch into the block's
    Capacity Reservation (``cr-...``) with market type ``capacity-block`` (CB-API), so one
    :meth:`~cdk_neuron.training.Capacity.capacity_block` serves both; this table says which kind
    a type is sold as.
    """

    on_demand: Sold
    reservation: Sold
    capacity_block: Sold
    ultraserver_capacity_block: Sold
    sources: tuple[str, ...]

    @property
    def capacity_block_kind(self) -> CapacityBlockKind | None:
        """``"instance"``, ``"ultraserver"`` or None (not sold as Capacity Blocks, or unknown)."""
        if self.capacity_block == "yes":
            return "instance"
        if self.ultraserver_capacity_block == "yes":
            return "ultraserver"
        return None


_SOLD_ON_DEMAND = PurchaseOptions("yes", "yes", "no", "no", ("MOTO", "ODCR", "CB-DOC", "CB-HOW"))

# On-Demand: MOTO usage classes. Reservations: ODCR (every type sold On-Demand; trn2u unknown because
# its On-Demand sale is). Instance Capacity Blocks: CB-DOC and CB-HOW list trn1.32xlarge and
# trn2.48xlarge (MOTO's capacity-block usage class agrees), not trn1n, trn1.2xlarge or Inf2.
# UltraServer Capacity Blocks: CB-HOW lists the Trn2 UltraServer, i.e. trn2u.48xlarge (TRN2-ARCH);
# MOTO @0af643a has no trn2u.48xlarge entry and KARP no price, so its On-Demand sale is unknown.
PURCHASE_OPTIONS: dict[str, PurchaseOptions] = {
    "trn1.2xlarge": _SOLD_ON_DEMAND,
    "trn1.32xlarge": PurchaseOptions("yes", "yes", "yes", "no", ("MOTO", "ODCR", "CB-DOC", "CB-HOW")),
    "trn1n.32xlarge": _SOLD_ON_DEMAND,
    "trn2.48xlarge": PurchaseOptions("yes", "yes", "yes", "no", ("MOTO", "ODCR", "CB-DOC", "CB-HOW")),
    "trn2u.48xlarge": PurchaseOptions(
        "unknown", "unknown", "no", "yes", ("MOTO", "KARP", "CB-DOC", "CB-HOW", "CB-API", "TRN2-ARCH")
    ),
    # MOTO-525 usage classes: capacity-block, on-demand, spot.
    "trn2.3xlarge": PurchaseOptions("yes", "yes", "yes", "no", ("MOTO-525", "ODCR")),
    # Trn3 is sold in UltraServers only (TRN3-ARCH); no source we could read says how (On-Demand,
    # reservations, UltraServer Capacity Blocks), looked 2026-12-01. Never instance Capacity Blocks:
    # an UltraServer is bought whole.
    "trn3.48xlarge": PurchaseOptions("unknown", "unknown", "no", "unknown", ("TRN3-ARCH", "CB-HOW", "US-CB")),
    "trn3-gen2-server": PurchaseOptions(
        "unknown", "unknown", "no", "unknown", ("TRN3-ARCH", "CB-HOW", "US-CB")
    ),
    "inf2.xlarge": _SOLD_ON_DEMAND,
    "inf2.8xlarge": _SOLD_ON_DEMAND,
    "inf2.24xlarge": _SOLD_ON_DEMAND,
    "inf2.48xlarge": _SOLD_ON_DEMAND,
}


def capacity_block_types(kind: CapacityBlockKind | None = None) -> tuple[str, ...]:
    """Catalogued types sold as Capacity Blocks (of ``kind`` when given), in catalog order."""
    return tuple(
        name
        for name in INSTANCES
        if PURCHASE_OPTIONS[name].capacity_block_kind is not None
        and (kind is None or PURCHASE_OPTIONS[name].capacity_block_kind == kind)
    )


# --------------------------------------------------------------------------------------------
# EFA launch-template network interfaces
# --------------------------------------------------------------------------------------------


class EfaLayout(enum.Enum):
    """How EFA interfaces are laid out across an instance's network cards.

    ``ALL_EFA``: every card gets an ``efa`` interface (EFA with ENA); DeviceIndex 0 on card 0 and 1
    on every other card, so outbound IP traffic always leaves through card 0 (EFA-SETUP). This is the
    layout in the Neuron documentation and samples.

    ``ENA_PRIMARY_EFA_ONLY``: an ENA primary interface (card 0, device 0), an ``efa-only`` interface at
    card 0 device 1, and an ``efa-only`` interface at device 1 on every other card. EFA-only
    interfaces carry no IP traffic, so they use no IP addresses. Revisions of EFA-MULTI disagree on the
    additional cards: the revisions served in the zh/ja/de editions and on docs.amazonaws.cn (en_us)
    say "for each additional network interface, use the next unused network card index, device index
    1, and either an EFA (EFA with ENA) or EFA-only network interface", while one English revision
    says device index 0 for EFA-only and 1 for ENA. We use device index 1, which every revision
    accepts for an EFA-only interface and which dstack's launch code uses too (dstackai/dstack #2271).
    """

    ALL_EFA = "efa"
    ENA_PRIMARY_EFA_ONLY = "ena-primary-efa-only"


def _efa_layout(layout: EfaLayout | str) -> EfaLayout:
    if isinstance(layout, EfaLayout):
        return layout
    if isinstance(layout, str):
        for member in EfaLayout:
            if layout in (member.name, member.value):
                return member
    raise NeuronConfigError(
        "layout",
        layout,
        f"use one of {one_of(m.name for m in EfaLayout)} (or their values {one_of(m.value for m in EfaLayout)})",
    )


def efa_network_interfaces(
    instance: NeuronInstance | str,
    security_group_ids: Sequence[str],
    layout: EfaLayout | str = EfaLayout.ALL_EFA,
) -> list[dict[str, Any]]:
    """The ``LaunchTemplateData.NetworkInterfaces`` list that puts one EFA on every EFA network card.

    ``layout`` is an :class:`EfaLayout` or its name/value (``"ALL_EFA"`` or ``"efa"``, ...); default
    ``EfaLayout.ALL_EFA``. Security groups go on every interface: a launch template with network
    interfaces must not also set top-level ``SecurityGroupIds``. No interface asks for a public IP.
    Either layout yields one EFA device per entry of :attr:`NeuronInstance.efa_devices`.
    """
    inst = get_instance(instance)
    if not inst.supports_efa:
        raise NeuronConfigError(
            "instance_type",
            inst.name,
            "has no EFA, so it cannot run multi-node collectives; use "
            f"{one_of(n for n, i in INSTANCES.items() if i.supports_efa)}",
        )
    # A bare string is a Sequence[str] too: list("sg-1") would silently become ["s", "g", "-", "1"].
    if (
        isinstance(security_group_ids, str)
        or not security_group_ids
        or not all(isinstance(g, str) and g for g in security_group_ids)
    ):
        raise NeuronConfigError(
            "security_group_ids",
            security_group_ids,
            "give a non-empty list of security group id strings, e.g. [sg.security_group_id]",
        )
    layout = _efa_layout(layout)

    def nic(card: int, device: int, kind: str | None) -> dict[str, Any]:
        interface: dict[str, Any] = {"NetworkCardIndex": card, "DeviceIndex": device}
        if kind is not None:  # omitted means a plain ENA interface
            interface["InterfaceType"] = kind
        return interface | {"Groups": list(security_group_ids), "DeleteOnTermination": True}

    # One EFA per card, on as many cards as the instance allows EFA interfaces (equal to the card
    # count on every catalogued type), so the interface list and efa_devices always agree.
    cards = range(min(inst.network_cards, inst.efa_interfaces))
    if layout is EfaLayout.ALL_EFA:
        return [nic(card, 0 if card == 0 else 1, "efa") for card in cards]
    if inst.max_interfaces_per_card < 2:
        raise NeuronConfigError(
            "layout", layout.name, f"{inst.name} allows one interface per card; use EfaLayout.ALL_EFA"
        )
    return [nic(0, 0, None), nic(0, 1, "efa-only"), *(nic(card, 1, "efa-only") for card in cards if card > 0)]


# --------------------------------------------------------------------------------------------
# Offerings by AZ ID
# --------------------------------------------------------------------------------------------

OFFERINGS_SOURCE = SOURCES["MOTO"]
OFFERINGS_NOTE = (
    "Offerings are dated snapshots (AZ IDs: moto @0af643a, 2026-08-22, generated from "
    "DescribeInstanceTypeOfferings; Regions: cfn-lint 1.58.0); where they are partial or silent the "
    "answer is unknown, and `cdk-neuron preflight` verifies against the live account."
)

_INF2_AZS: dict[str, tuple[str, ...]] = {
    "us-east-1": ("use1-az2", "use1-az4", "use1-az5", "use1-az6"),
    "us-east-2": ("use2-az1", "use2-az2", "use2-az3"),
    "us-west-2": ("usw2-az1", "usw2-az2", "usw2-az3", "usw2-az4"),
    "ap-northeast-1": ("apne1-az1", "apne1-az4"),
    "ap-south-1": ("aps1-az1", "aps1-az3"),
    "ap-southeast-1": ("apse1-az2", "apse1-az3"),
    "ap-southeast-2": ("apse2-az1", "apse2-az3"),
    "eu-central-1": ("euc1-az2", "euc1-az3"),
    "eu-north-1": ("eun1-az1", "eun1-az2"),
    "eu-west-1": ("euw1-az1", "euw1-az2", "euw1-az3"),
    "eu-west-2": ("euw2-az2",),
    "eu-west-3": ("euw3-az2", "euw3-az3"),
    "sa-east-1": ("sae1-az3",),
}

# instance -> region -> AZ IDs (source MOTO). SKY agrees except: it has no apse4-az1 for
# trn1.32xlarge, only use2-az1 for trn2.48xlarge (noted below), only apne2-az1/az2 for inf2.xlarge in
# ap-northeast-2, and no sa-east-1 row for inf2.
OFFERINGS: dict[str, dict[str, tuple[str, ...]]] = {
    "trn1.2xlarge": {
        "us-east-1": ("use1-az5", "use1-az6"),
        "us-east-2": ("use2-az3",),
        "us-west-2": ("usw2-az1", "usw2-az4"),
    },
    "trn1.32xlarge": {
        "us-east-1": ("use1-az4", "use1-az5", "use1-az6"),
        "us-east-2": ("use2-az3",),
        "us-west-2": ("usw2-az1", "usw2-az4"),
        "ap-south-1": ("aps1-az2",),
        "ap-southeast-2": ("apse2-az1", "apse2-az2"),
        "ap-southeast-4": ("apse4-az1",),
    },
    "trn1n.32xlarge": {
        "us-east-1": ("use1-az6",),
        "us-east-2": ("use2-az3",),
        "us-west-2": ("usw2-az4",),
    },
    # SKY lists only use2-az1; cfn-lint's data adds ap-south-2 (no AZ IDs). We use MOTO.
    "trn2.48xlarge": {"us-east-2": ("use2-az1", "use2-az2", "use2-az3")},
    # No AZ-level offering data for trn2u.48xlarge in our sources: offered_az_ids() is empty and
    # offering_status() answers "unknown"; preflight checks the live account.
    "trn2u.48xlarge": {},
    # MOTO-525 (not in MOTO @0af643a).
    "trn2.3xlarge": {
        "ap-south-2": ("aps2-az1", "aps2-az2", "aps2-az3"),
        "ap-southeast-4": ("apse4-az3",),
        "sa-east-1": ("sae1-az1", "sae1-az2", "sae1-az3"),
    },
    # No offering data for Trn3 in any source we could read (looked 2026-12-01): "unknown" everywhere.
    "trn3.48xlarge": {},
    "trn3-gen2-server": {},
    "inf2.xlarge": {**_INF2_AZS, "ap-northeast-2": ("apne2-az1", "apne2-az2", "apne2-az3")},
    "inf2.8xlarge": dict(_INF2_AZS),
    "inf2.24xlarge": dict(_INF2_AZS),
    "inf2.48xlarge": dict(_INF2_AZS),
}

# Second source, by Region (CFN-LINT: the InstanceType values cfn-lint 1.58.0 accepts per Region).
# Types it does not know (trn2.3xlarge, trn2u.48xlarge, Trn3) have no entry: no second source. It is
# partial too: it lists trn1.32xlarge in three Regions where moto also has ap-south-1, ap-southeast-2
# and ap-southeast-4, and trn2.48xlarge in ap-south-2, which moto and SKY lack (and its release
# v1.55.1 lacked). A type either source lists in a Region is offered there.
_TRN1_REGIONS = ("us-east-1", "us-east-2", "us-west-2")
_INF2_REGIONS = (
    "ap-northeast-1", "ap-south-1", "ap-southeast-1", "ap-southeast-2", "eu-central-1", "eu-north-1",
    "eu-west-1", "eu-west-2", "eu-west-3", "sa-east-1", "us-east-1", "us-east-2", "us-west-2",
)  # fmt: skip
REGION_OFFERINGS: dict[str, tuple[str, ...]] = {
    "trn1.2xlarge": _TRN1_REGIONS,
    "trn1.32xlarge": _TRN1_REGIONS,
    "trn1n.32xlarge": _TRN1_REGIONS,
    "trn2.48xlarge": ("ap-south-2", "us-east-2"),
    "inf2.xlarge": tuple(sorted((*_INF2_REGIONS, "ap-northeast-2"))),
    "inf2.8xlarge": _INF2_REGIONS,
    "inf2.24xlarge": _INF2_REGIONS,
    "inf2.48xlarge": _INF2_REGIONS,
}
# The Regions CFN-LINT's table covers: for a type it knows, absence from one of them means "not listed".
REGION_OFFERINGS_REGIONS: frozenset[str] = frozenset(
    {
        "af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3",
        "ap-south-1", "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4",
        "ap-southeast-5", "ap-southeast-6", "ap-southeast-7", "ca-central-1", "ca-west-1", "cn-north-1",
        "cn-northwest-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2",
        "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1", "me-south-1", "mx-central-1",
        "sa-east-1", "us-east-1", "us-east-2", "us-gov-east-1", "us-gov-west-1", "us-west-1", "us-west-2",
    }
)  # fmt: skip

OfferingStatus = Literal["offered", "not-offered", "unknown"]


def _check_region(region: object) -> str:
    return validation.region("region", region)


def _check_az_id(az_id: object) -> str:
    return validation.az_id("az_id", az_id)


def _covered_regions() -> frozenset[str]:
    return frozenset(region for regions in OFFERINGS.values() for region in regions)


def region_of_az_id(az_id: str) -> str | None:
    """The region an AZ ID belongs to, from the offerings table (None when no table row names it)."""
    for regions in OFFERINGS.values():
        for region, az_ids in regions.items():
            if az_id in az_ids:
                return region
    return None


def offered_az_ids(instance_name: str | NeuronInstance, region: str) -> tuple[str, ...]:
    """AZ IDs in ``region`` that offer ``instance_name``, from the dated offerings table.

    Empty when the sources say the type is not offered there, *or* when they have no AZ data
    (trn2u.48xlarge, trn2.48xlarge in ap-south-2, regions no row mentions): use
    :func:`region_offering_status` to tell them apart before refusing a region. ``cdk-neuron
    preflight`` verifies against the live account.
    """
    inst = get_instance(instance_name)
    region = _check_region(region)
    return OFFERINGS.get(inst.key, {}).get(region, ())


def region_offering_status(instance_name: str | NeuronInstance, region: str) -> OfferingStatus:
    """Whether ``region`` offers ``instance_name`` in at least one AZ, by both offerings sources.

    ``"offered"`` when either source lists the type there (the AZ snapshot :data:`OFFERINGS`, or
    :data:`REGION_OFFERINGS`). ``"not-offered"`` only when both have data for the type, both cover
    the region, and neither lists it. Otherwise ``"unknown"``: a snapshot that covers a region for
    other types but not this one (trn2.3xlarge in us-east-2) is partial, not a refusal, and only
    preflight against the live account can answer.
    """
    inst = get_instance(instance_name)
    region = _check_region(region)
    table = OFFERINGS.get(inst.key, {})
    if table.get(region) or region in REGION_OFFERINGS.get(inst.key, ()):
        return "offered"
    both_know_the_type = bool(table) and inst.key in REGION_OFFERINGS
    both_cover_the_region = region in _covered_regions() and region in REGION_OFFERINGS_REGIONS
    return "not-offered" if both_know_the_type and both_cover_the_region else "unknown"


def _region_of_prefix(prefix: str) -> str | None:
    """The region of an AZ ID prefix (``use1``), from the AZ IDs the offerings table names."""
    for regions in OFFERINGS.values():
        for region, az_ids in regions.items():
            if any(a.split("-az")[0] == prefix for a in az_ids):
                return region
    return None


def offering_status(instance_name: str | NeuronInstance, az_id: str) -> OfferingStatus:
    """Whether ``az_id`` (an AZ ID such as ``use1-az4``) offers ``instance_name``.

    ``"offered"`` when the AZ snapshot lists it; ``"not-offered"`` when the snapshot lists the type
    in other AZs of the same region (its data for that region is there) or when
    :func:`region_offering_status` says the region does not offer it; otherwise ``"unknown"``.
    """
    inst = get_instance(instance_name)
    az_id = _check_az_id(az_id)
    table = OFFERINGS.get(inst.key, {})
    if any(az_id in ids for ids in table.values()):
        return "offered"
    region = _region_of_prefix(az_id.split("-az")[0])
    if region is None:
        return "unknown"
    if table.get(region):
        return "not-offered"
    return "not-offered" if region_offering_status(inst, region) == "not-offered" else "unknown"


# --------------------------------------------------------------------------------------------
# Prices
# --------------------------------------------------------------------------------------------

PRICES_DATE = "2026-01-19"
PRICES_NOTE = (
    f"On-demand Linux prices, USD/hour, us-east-1 unless stated, as of {PRICES_DATE} "
    "(karpenter-provider-aws generated price file, from the AWS Price List API). Prices change: "
    "refresh this table before relying on it; preflight and the AWS Pricing API are the truth."
)


@dataclass(frozen=True)
class Price:
    usd_per_hour: float
    region: str
    source: str
    note: str = ""


# trn1/trn1n/inf2: identical in KARP (2026-01-19), SKY (2025) and FMB (2024). GPU comparators: KARP,
# after the mid-2025 P-family price cut (SKY/FMB predate it: p4d 32.7726, p5 98.32).
# trn2.48xlarge: sources disagree (SKY 85.964 vs Vantage 35.76, both us-east-2) -> we carry SKY's
# figure flagged as uncertain and the cost tool prints the note.
ON_DEMAND_PRICES: dict[str, Price] = {
    "trn1.2xlarge": Price(1.34375, "us-east-1", "KARP"),
    "trn1.32xlarge": Price(21.50, "us-east-1", "KARP"),
    "trn1n.32xlarge": Price(24.78, "us-east-1", "KARP"),
    "trn2.48xlarge": Price(
        85.964, "us-east-2", "SKY", "uncertain: Vantage (2025-11-30) lists 35.76; verify before budgeting"
    ),
    "inf2.xlarge": Price(0.7582, "us-east-1", "KARP"),
    "inf2.8xlarge": Price(1.96786, "us-east-1", "KARP"),
    "inf2.24xlarge": Price(6.49063, "us-east-1", "KARP"),
    "inf2.48xlarge": Price(12.98127, "us-east-1", "KARP"),
    # GPU comparators
    "p4d.24xlarge": Price(21.957642, "us-east-1", "KARP", "after the 2025-06 price cut (was 32.7726)"),
    "p5.48xlarge": Price(55.04, "us-east-1", "KARP", "after the 2025-06 price cut (was 98.32)"),
    "g5.xlarge": Price(1.006, "us-east-1", "KARP"),
    "g5.12xlarge": Price(5.672, "us-east-1", "KARP"),
    "g5.48xlarge": Price(16.288, "us-east-1", "KARP"),
    "g6e.xlarge": Price(1.861, "us-east-1", "KARP"),
    "g6e.12xlarge": Price(10.49264, "us-east-1", "KARP"),
    "g6e.48xlarge": Price(30.13118, "us-east-1", "KARP"),
}

# Neuron types no source we could read prices (looked 2026-12-01): the cost tool prints "unknown".
# UltraServer Capacity Block prices are quoted per block at purchase (DescribeCapacityBlockOfferings
# UpfrontFee); no published table covers Trn2 or Trn3 UltraServers.
UNPRICED: dict[str, str] = {
    "trn2.3xlarge": "no On-Demand price in KARP @031e72b6 or SKY",
    "trn2u.48xlarge": "sold as Trn2 UltraServer Capacity Blocks; no published hourly price",
    "trn3.48xlarge": "Trn3 Gen1 UltraServer: no published price",
    "trn3-gen2-server": "Trn3 Gen2 UltraServer: no published price",
}
ULTRASERVER_CAPACITY_BLOCK_PRICES: dict[str, Price | None] = {key: None for key in ULTRASERVERS}
# EC2's UltraserverType strings (DescribeCapacityBlockOfferings, CapacityBlock.ultraserverType): no
# source we could read publishes them for Trn2 or Trn3 (looked 2026-12-01), so none is pinned.
ULTRASERVER_API_TYPES: dict[str, str | None] = {key: None for key in ULTRASERVERS}


def known_price(instance_name: str) -> Price | None:
    """The dated on-demand price, or None where no source publishes one (:data:`UNPRICED`)."""
    key = get_instance(instance_name).key if instance_name not in ON_DEMAND_PRICES else instance_name
    if key in UNPRICED:
        return None
    return on_demand_price(instance_name)


# Regions whose on-demand Neuron prices equal the us-east-1 figures above: SKY's on-demand column
# lists the same trn1.32xlarge, trn1n.32xlarge and inf2 prices in us-east-1, us-east-2 and us-west-2.
# Elsewhere prices differ (inf2 in eu-west-1 is about 25 % higher, also SKY): REGIONAL_PRICES holds
# the ones SKY lists, and regional_price() answers None (unknown) for the rest, never the us-east-1
# figure.
SAME_PRICE_REGIONS: frozenset[str] = frozenset({"us-east-1", "us-east-2", "us-west-2"})

# On-demand Linux prices outside SAME_PRICE_REGIONS, USD/hour, from SKY's on-demand column.
REGIONAL_PRICES: dict[str, dict[str, Price]] = {
    "inf2.xlarge": {
        r: Price(v, r, "SKY")
        for r, v in (
            ("ap-northeast-1", 1.1373), ("ap-northeast-2", 0.90984), ("ap-south-1", 0.98566),
            ("ap-southeast-1", 1.06148), ("ap-southeast-2", 0.98566), ("eu-central-1", 1.1373),
            ("eu-north-1", 0.83402), ("eu-west-1", 0.94775), ("eu-west-2", 1.1373), ("eu-west-3", 1.06148),
        )
    },
    "inf2.8xlarge": {r: Price(v, r, "SKY") for r, v in (("eu-west-1", 2.45982), ("eu-north-1", 2.16465))},
    "inf2.24xlarge": {
        r: Price(v, r, "SKY")
        for r, v in (
            ("eu-west-1", 8.11329), ("eu-north-1", 7.1397), ("ap-northeast-1", 9.73595),
            ("eu-central-1", 9.73595), ("eu-west-2", 9.73595),
        )
    },
    "inf2.48xlarge": {
        r: Price(v, r, "SKY")
        for r, v in (("eu-west-1", 16.22658), ("eu-north-1", 14.27939), ("ap-northeast-1", 19.4719))
    },
}  # fmt: skip


def regional_price(instance_name: str, region: str) -> Price | None:
    """The on-demand price of ``instance_name`` in ``region``, or None where no source gives one.

    The us-east-1 table price in SAME_PRICE_REGIONS, a REGIONAL_PRICES entry elsewhere; prices are never
    carried to a region no source prices.
    """
    region = _check_region(region)
    price = known_price(instance_name)
    if price is None:
        return None
    if region == price.region or (price.source == "KARP" and {price.region, region} <= SAME_PRICE_REGIONS):
        return price
    key = instance_name if instance_name in ON_DEMAND_PRICES else get_instance(instance_name).key
    return REGIONAL_PRICES.get(key, {}).get(region)


@dataclass(frozen=True)
class SpotSample:
    """Spot prices sampled once per AZ, USD/hour: the lowest and highest, with the date of the sample.

    Spot prices move with supply and demand; these say what the discount looked like, not what it is.
    AWS Batch multi-node parallel jobs cannot run on Spot compute environments (MNP-SPOT).
    """

    low: float
    high: float
    on_demand: float
    source: str
    date: str

    @property
    def discount_range(self) -> tuple[float, float]:
        """The smallest and largest discount below on-demand, as fractions."""
        return (1 - self.high / self.on_demand, 1 - self.low / self.on_demand)


# SKY's spot column, one sample per AZ of us-east-1, us-east-2 and us-west-2 (content of about
# April-May 2025). No Spot sample for trn2.48xlarge (MOTO lists the spot usage class), trn2.3xlarge,
# trn2u.48xlarge or Trn3. inf2.8xlarge's samples are 0.50 to 0.63, rounded in SKY's rows.
SPOT_SAMPLES: dict[str, SpotSample] = {
    name: SpotSample(low, high, ON_DEMAND_PRICES[name].usd_per_hour, "SKY", "2025-05")
    for name, low, high in (
        ("trn1.2xlarge", 0.19, 0.4032),
        ("trn1.32xlarge", 2.1553, 6.6028),
        ("trn1n.32xlarge", 2.4904, 7.9214),
        ("inf2.xlarge", 0.0913, 0.2462),
        ("inf2.8xlarge", 0.50, 0.63),
        ("inf2.24xlarge", 0.9324, 2.13),
        ("inf2.48xlarge", 1.42, 4.08),
    )
}

# SageMaker hosting prices (FMB, 2024-06-11): about 20-31 % above EC2 for ml.inf2. Of the ml.* types
# the SageMaker fleet accepts, SAGEMAKER_UNPRICED lists those no source we could read prices for
# hosting (looked 2026-12-01); the cost tool prints them as unknown instead of guessing a premium.
SAGEMAKER_PRICES: dict[str, Price] = {
    "ml.inf2.xlarge": Price(0.99, "us-east-1", "FMB"),
    "ml.inf2.8xlarge": Price(2.36, "us-east-1", "FMB"),
    "ml.inf2.24xlarge": Price(7.79, "us-east-1", "FMB"),
    "ml.inf2.48xlarge": Price(15.58, "us-east-1", "FMB"),
    "ml.trn1.32xlarge": Price(28.497, "us-east-1", "FMB"),
}
SAGEMAKER_UNPRICED: dict[str, str] = {
    "ml.trn1.2xlarge": "no SageMaker hosting price in FMB @00ef155d or any other source we could read",
    "ml.trn1n.32xlarge": "no SageMaker hosting price in FMB @00ef155d or any other source we could read",
    "ml.trn2.48xlarge": "no SageMaker hosting price in FMB @00ef155d or any other source we could read",
}

# SageMaker general-purpose instances at the same source's hosting rate (FMB @00ef155d, 2024-06-11,
# src/fmbench/configs/pricing.yml). HyperPod's own per-hour rates are in no source we could read; this
# is the proxy for a HyperPod Slurm controller (ml.m5.xlarge by default), labelled as such wherever used.
SAGEMAKER_GENERAL_PRICES: dict[str, Price] = {
    "ml.m5.xlarge": Price(0.23, "us-east-1", "FMB"),
}

# Supporting services, us-east-1 (SERVICES).
SERVICE_PRICES: dict[str, Price] = {
    # Hourly rates are per hour; "_month" rates are per unit-month (the cost tool divides by 730 h).
    "nat_gateway_hour": Price(0.045, "us-east-1", "SVC-NAT"),
    "public_ipv4_hour": Price(0.005, "us-east-1", "SVC-NAT", "per public IPv4 address"),
    "alb_hour": Price(0.0225, "us-east-1", "SVC-ALB", "plus $0.008 per LCU-hour"),
    "interface_endpoint_az_hour": Price(
        0.01, "us-east-1", "SVC-ENDPOINT", "weak source: implied by $7.20/AZ/month"
    ),
    "efs_standard_gb_month": Price(0.30, "us-east-1", "SVC-EFS"),
    "s3_standard_gb_month": Price(0.023, "us-east-1", "SVC-S3"),
    "kms_key_month": Price(1.00, "us-east-1", "SVC-KMS", "plus $1 for each of the first two rotations"),
    "alarm_month": Price(0.10, "us-east-1", "SVC-CW", "standard resolution"),
    "dashboard_month": Price(3.00, "us-east-1", "SVC-CW"),
}

# Fargate, Linux/x86 on-demand, us-east-1: what a ModelCompilation task (cdk_neuron.compilation)
# is billed per second while it runs (vCPU, memory, and ephemeral storage above the 20 GB included).
FARGATE_PRICES: dict[str, Price] = {
    "vcpu_hour": Price(0.04048, "us-east-1", "SVC-FARGATE", "per vCPU-hour"),
    "gb_hour": Price(0.004445, "us-east-1", "SVC-FARGATE", "per GB of memory-hour"),
    "ephemeral_gb_hour": Price(0.000111, "us-east-1", "SVC-FARGATE", "per GB-hour above the 20 GB included"),
}
FARGATE_INCLUDED_EPHEMERAL_GB = 20
"""Ephemeral storage every Fargate task gets without charge."""

# NAT instances (network.nat_instance_type): the small burstable types a NAT runs on, us-east-1
# on-demand Linux, from the same Price List API snapshot as ON_DEMAND_PRICES.
NAT_INSTANCE_PRICES: dict[str, Price] = {
    "t4g.nano": Price(0.0042, "us-east-1", "KARP"),
    "t4g.micro": Price(0.0084, "us-east-1", "KARP"),
    "t4g.small": Price(0.0168, "us-east-1", "KARP"),
    "t3.nano": Price(0.0052, "us-east-1", "KARP"),
    "t3.micro": Price(0.0104, "us-east-1", "KARP"),
    "t3.small": Price(0.0208, "us-east-1", "KARP"),
}


def on_demand_price(instance_name: str) -> Price:
    """The dated on-demand price of an EC2 instance (``trn1.32xlarge``) or SageMaker one (``ml.inf2.xlarge``)."""
    price = SAGEMAKER_PRICES.get(instance_name) or ON_DEMAND_PRICES.get(instance_name)
    if price is not None:
        return price
    raise NeuronConfigError(
        "instance_type",
        instance_name,
        f"no price on record (table dated {PRICES_DATE}); priced types: "
        f"{one_of([*ON_DEMAND_PRICES, *SAGEMAKER_PRICES])}",
    )


# --------------------------------------------------------------------------------------------
# Software facts used by the constructs (AMIs), kept here so they are pinned in one place.
# --------------------------------------------------------------------------------------------

# ECS-optimized Amazon Linux 2023 Neuron AMI (SSM parameter: aws/aws-cdk aws-ecs/test/amis.test.ts).
# It is built from the AL2023 *minimal* AMI (ECS-AMI-BASE) and adds the Neuron driver
# (aws-neuronx-dkms), aws-neuronx-oci-hook, oci-add-hooks and aws-neuronx-tools (ECS-AMI-NEURON).
# It does NOT include the EFA software (aws-efa-installer, libfabric): multi-node EFA needs it
# installed separately.
ECS_NEURON_AMI_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"
# Neuron multi-framework DLAMI (Ubuntu 24.04): Inf2, Trn1, Trn1n, Trn2 (aws-neuron-sdk dlami.rst @43a8962).
NEURON_DLAMI_PARAMETER = "/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id"
# Neuron Base DLAMI (driver, EFA, tools) on AL2023.
NEURON_BASE_DLAMI_PARAMETER = "/aws/service/neuron/dlami/base/amazon-linux-2023/latest/image_id"
# SageMaker hosting AMI for Inferentia2 / Trainium (ProductionVariant.InferenceAmiVersion).
SAGEMAKER_NEURON_AMI_VERSION = "al2-ami-sagemaker-inference-neuron-2"


__all__ = [
    "ECS_NEURON_AMI_PARAMETER",
    "FARGATE_INCLUDED_EPHEMERAL_GB",
    "FARGATE_PRICES",
    "HBM_GIB_PER_NEURONCORE_V2",
    "INFERENCE_TP_DEGREES",
    "INFERENCE_TP_SOURCES",
    "INSTANCES",
    "NAT_INSTANCE_PRICES",
    "NEURON_BASE_DLAMI_PARAMETER",
    "NEURON_DLAMI_PARAMETER",
    "OFFERINGS",
    "OFFERINGS_NOTE",
    "ON_DEMAND_PRICES",
    "PRICES_DATE",
    "PRICES_NOTE",
    "PURCHASE_OPTIONS",
    "REGIONAL_PRICES",
    "REGION_OFFERINGS",
    "REGION_OFFERINGS_REGIONS",
    "SAGEMAKER_GENERAL_PRICES",
    "SAGEMAKER_NEURON_AMI_VERSION",
    "SAGEMAKER_PRICES",
    "SAGEMAKER_UNPRICED",
    "SERVICE_PRICES",
    "SOURCES",
    "SOURCE_LIST",
    "SPOT_SAMPLES",
    "TP_DISAGREEMENTS",
    "TRAINING_TP_DEGREES",
    "TRAINING_TP_SOURCES",
    "TRAINING_TP_UNSUPPORTED",
    "TRN3_EVIDENCE",
    "ULTRASERVERS",
    "ULTRASERVER_API_TYPES",
    "ULTRASERVER_CAPACITY_BLOCK_PRICES",
    "UNKNOWN_LOOKED",
    "UNPRICED",
    "CapacityBlockKind",
    "EfaLayout",
    "Evidence",
    "NeuronInstance",
    "Price",
    "PurchaseOptions",
    "Sold",
    "Source",
    "SpotSample",
    "UltraServerType",
    "capacity_block_types",
    "efa_network_interfaces",
    "get_inference_instance",
    "get_instance",
    "get_training_instance",
    "inference_tp_degrees",
    "known_instances",
    "known_price",
    "offered_az_ids",
    "offering_status",
    "on_demand_price",
    "region_of_az_id",
    "region_offering_status",
    "regional_price",
    "tp_disagreement",
    "training_tp_degrees",
    "training_tp_unsupported",
]


# --------------------------------------------------------------------------------------------
# GPU comparators (for `cdk-neuron cost`): only what a like-for-like comparison needs.
# --------------------------------------------------------------------------------------------

SOURCES["MOTO-GPU"] = Source(
    "MOTO-GPU",
    "getmoto/moto 5.2.5 moto/ec2/resources/instance_types.json GpuInfo (generated from "
    "DescribeInstanceTypes), read through ec2.describe_instance_types",
    "2026-08",
)


@dataclass(frozen=True)
class GpuInstance:
    """An NVIDIA GPU instance the cost comparison sets against Trainium or Inferentia2.

    ``gpu_memory_mib`` is per GPU as DescribeInstanceTypes reports it (A100 40,960 MiB; H100
    81,920 MiB; A10G 22,888 MiB, sold as "24 GB"; L40S 45,776 MiB, sold as "48 GB").
    """

    name: str
    gpu: str
    gpus: int
    gpu_memory_mib: int
    vcpus: int
    role: Family
    source: str = "MOTO-GPU"

    @property
    def gpu_memory_gib(self) -> float:
        return self.gpu_memory_mib / 1024

    @property
    def total_gpu_memory_gib(self) -> float:
        return self.gpus * self.gpu_memory_gib


GPU_INSTANCES: dict[str, GpuInstance] = {
    g.name: g
    for g in (
        GpuInstance("p4d.24xlarge", "A100", 8, 40960, 96, "training"),
        GpuInstance("p5.48xlarge", "H100", 8, 81920, 192, "training"),
        GpuInstance("g5.xlarge", "A10G", 1, 22888, 4, "inference"),
        GpuInstance("g5.12xlarge", "A10G", 4, 22888, 48, "inference"),
        GpuInstance("g5.48xlarge", "A10G", 8, 22888, 192, "inference"),
        GpuInstance("g6e.xlarge", "L40S", 1, 45776, 4, "inference"),
        GpuInstance("g6e.12xlarge", "L40S", 4, 45776, 48, "inference"),
        GpuInstance("g6e.48xlarge", "L40S", 8, 45776, 192, "inference"),
    )
}

__all__ += ["GPU_INSTANCES", "GpuInstance"]


# --------------------------------------------------------------------------------------------
# Throughput of exact configurations: what the cost of a result is computed from
# --------------------------------------------------------------------------------------------

ThroughputLabel = Literal["published", "measured", "estimated"]

# The names of the serving weight dtypes a figure can be matched on: size_model's aliases folded.
_WEIGHT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def weight_dtype(dtype: str) -> str:
    """``dtype`` as throughput rows name weight dtypes (``bfloat16`` -> ``bf16``)."""
    return _WEIGHT_DTYPES.get(dtype.lower(), dtype.lower())


@dataclass(frozen=True)
class Throughput:
    """Tokens per second of one exact configuration, and who says so.

    ``tokens_per_second`` is for the whole configuration (every instance of a training run; every
    replica of one serving instance). Training figures count trained tokens (sequences/s x sequence
    length); serving figures count generated (output) tokens. ``instances`` may be a fraction where a
    published GPU figure used part of an instance (2 of a p5.48xlarge's 8 GPUs: 0.25).
    """

    kind: Literal["training", "serving"]
    model: str
    parameters: int
    instance_type: str
    instances: float
    tensor_parallel: int
    pipeline_parallel: int
    batch_size: int
    """Training: the micro-batch per data-parallel replica. Serving: concurrent sequences per replica."""
    sequence_length: int
    """Training: tokens per sequence. Serving: the sequence length the graph was compiled for."""
    tokens_per_second: float
    precision: str
    configuration: str
    source: str
    label: ThroughputLabel = "published"
    also_on: tuple[str, ...] = ()
    """Other instance types the source names for the same figure without saying which one ran
    (NEURON-TRAIN-PERF: "trn1.32xlarge/trn1n.32xlarge")."""
    input_tokens: int | None = None
    """Serving: prompt tokens per request in the measurement."""
    output_tokens: int | None = None
    """Serving: generated tokens per request in the measurement."""
    weight_dtype: str | None = None
    """Serving: the dtype the weights were stored in (``bf16``, ``int8``, ``fp8``); a figure is only
    matched to a deployment of the same weight dtype."""
    global_batch: int | None = None
    """Training: sequences per optimizer step."""
    legacy: str | None = None
    """Why the runtime that measured the figure is not one cdk-neuron deploys, or None. A serving cost
    built on such a figure is labelled estimated and says so."""

    @property
    def date(self) -> str:
        return SOURCES[self.source].date if self.source in SOURCES else ""

    @property
    def instance_types(self) -> tuple[str, ...]:
        """Every instance type the figure may have been measured on."""
        return (self.instance_type, *self.also_on)

    def describe(self) -> str:
        count = f"{self.instances:g} x " if self.instances != 1 else ""
        types = "/".join(self.instance_types)
        traffic = (
            f", {self.input_tokens:,} input / {self.output_tokens:,} output tokens"
            if self.input_tokens is not None and self.output_tokens is not None
            else ""
        )
        weights = f", {self.weight_dtype} weights" if self.weight_dtype is not None else ""
        return (
            f"{self.model} on {count}{types}, TP {self.tensor_parallel}"
            f"{f' PP {self.pipeline_parallel}' if self.pipeline_parallel > 1 else ''}, "
            f"{'micro-batch' if self.kind == 'training' else 'batch'} {self.batch_size}, "
            f"{self.sequence_length:,} tokens{traffic}, {self.precision}{weights}: "
            f"{self.tokens_per_second:,.2f} tokens/s ({self.configuration}; {self.label}, {self.source} {self.date})"
        )


_LLAMA3_8B = 8_030_261_248  # MODEL-SHAPES: Llama 3 / 3.1 8B
_LLAMA3_70B = 70_553_706_496  # MODEL-SHAPES: Llama 3 / 3.1 / 3.3 70B
# NEURON-TRAIN-PERF's instance column reads "trn1.32xlarge/trn1n.32xlarge" and its page is titled
# "Trn1/Trn1n Training Performance": which of the two ran is not said.
_TRN1_OR_TRN1N = ("trn1n.32xlarge",)
_TNX = (
    "measured with Transformers NeuronX, whose support ended with Neuron 2.26 (TNX-EOS); cdk-neuron's engines "
    "serve with NxD Inference or optimum-neuron's NxD-based backend"
)

# Neuron: NEURON-TRAIN-PERF (sequences/s x 8,192), OPTN-BENCH and NEURON-INF-PERF (Transformers
# NeuronX, legacy). GPU comparators: NEMO-PERF (DGX-H100, 8 x H100 80GB SXM per node, the GPUs of a
# p5.48xlarge; its network is not the same) and NIM-PERF. Figures are transcribed, never scaled: a
# configuration no row matches gets no published figure (economics.py says so and takes a
# measurement). Where OPTN-BENCH and NEURON-INF-PERF both measured Llama 3 70B on inf2.48xlarge at
# batch 1 they agree (29 against 28.84 tokens/s, with different prompts).
PUBLISHED_THROUGHPUT: tuple[Throughput, ...] = (
    Throughput(
        "training", "Llama-3.1-8B", _LLAMA3_8B, "trn1.32xlarge", 32, 32, 1, 1, 8192, 47.95 * 8192,
        "BF16 autocast, FP32 optimizer", "TP=32 DP=32 PP=1 ZeRO-1, global batch 1,024, AdamW, Neuron 2.24.0, "
        "47.95 sequences/s", "NEURON-TRAIN-PERF", also_on=_TRN1_OR_TRN1N, global_batch=1024,
    ),
    Throughput(
        "training", "Llama-3.1-70B", _LLAMA3_70B, "trn1.32xlarge", 32, 32, 8, 1, 8192, 7.94 * 8192,
        "BF16 autocast, FP32 optimizer", "TP=32 DP=4 PP=8, global batch 1,024, AdamW, Neuron 2.24.0, "
        "7.94 sequences/s", "NEURON-TRAIN-PERF", also_on=_TRN1_OR_TRN1N, global_batch=1024,
    ),
    Throughput(
        "training", "Llama-3-8B", _LLAMA3_8B, "p5.48xlarge", 1, 1, 1, 1, 8192, 14451 * 8, "FP8 (current scaling)",
        "DGX-H100, 8 GPUs, FSDP, global batch 128, NeMo 25.11 container, 14,451 tokens/s per GPU", "NEMO-PERF",
        global_batch=128,
    ),
    Throughput(
        "training", "Llama-3-70B", _LLAMA3_70B, "p5.48xlarge", 8, 4, 8, 1, 8192, 1602 * 64, "FP8 (current scaling)",
        "DGX-H100, 64 GPUs, VP 5, global batch 128, NeMo 25.11 container, 1,602 tokens/s per GPU", "NEMO-PERF",
        global_batch=128,
    ),
    # OPTN-BENCH: the chart's figures at 1,024 input tokens (256 to 1,792 give 28-29, 74-85 and 102-104).
    *(
        Throughput(
            "serving", "Llama-3.3-70B", _LLAMA3_70B, "inf2.48xlarge", 1, 24, 1, batch, 4096, figure, "BF16 auto-cast",
            "optimum-neuron 0.3.0.dev5 (NxD-based backend), Neuron SDK 2.24.0, static batching", "OPTN-BENCH",
            input_tokens=1024, output_tokens=256, weight_dtype="bf16",
        )
        for batch, figure in ((1, 29.0), (4, 75.0), (8, 104.0))
    ),
    Throughput(
        "serving", "Llama-3-70B", _LLAMA3_70B, "inf2.48xlarge", 1, 24, 1, 1, 4096, 28.84, "FP16, matmul BF16",
        "Transformers NeuronX, Neuron 2.18.1", "NEURON-INF-PERF", input_tokens=2048, output_tokens=2048,
        weight_dtype="bf16", legacy=_TNX,
    ),
    Throughput(
        "serving", "Llama-3-8B", _LLAMA3_8B, "inf2.48xlarge", 1, 24, 1, 8, 4096, 859.09, "FP16, matmul BF16",
        "Transformers NeuronX, Neuron 2.18.1", "NEURON-INF-PERF", input_tokens=128, output_tokens=3968,
        weight_dtype="int8", legacy=_TNX,
    ),
    Throughput(
        "serving", "Llama-3-8B", _LLAMA3_8B, "inf2.48xlarge", 1, 24, 1, 8, 4096, 759.15, "FP16, matmul BF16",
        "Transformers NeuronX, Neuron 2.18.1", "NEURON-INF-PERF", input_tokens=2048, output_tokens=2048,
        weight_dtype="int8", legacy=_TNX,
    ),
    Throughput(
        "serving", "Llama-3-70B", _LLAMA3_70B, "trn1.32xlarge", 1, 32, 1, 4, 4096, 120.3614, "FP16, matmul BF16",
        "Transformers NeuronX, Neuron 2.18.1", "NEURON-INF-PERF", input_tokens=2048, output_tokens=2048,
        weight_dtype="bf16", legacy=_TNX,
    ),
    Throughput(
        "serving", "Llama-3.3-70B", _LLAMA3_70B, "p5.48xlarge", 0.25, 2, 1, 1, 2500, 52.85, "FP8",
        "NIM 1.8.0 on 2 x H100 80G (a quarter of a p5.48xlarge), concurrency 1", "NIM-PERF",
        input_tokens=500, output_tokens=2000, weight_dtype="fp8",
    ),
)  # fmt: skip
# Parameter counts within this fraction count as the same model size when matching a figure.
SAME_SIZE = 0.05

__all__ += ["PUBLISHED_THROUGHPUT", "SAME_SIZE", "Throughput", "ThroughputLabel", "weight_dtype"]


# ------------------------------------------------------------------------------------------------
# Host I/O: what bounds how fast a serving instance can fill itself
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostIo:
    """The published bandwidths a serving instance's start-up is bounded by.

    ``network_gbps`` / ``network_burst_gbps``: the instance's baseline and burst network bandwidth
    (MOTO's ``NetworkPerformance`` / KARP's baseline figures); traffic to S3 in the same Region may
    use all of it (EC2-NETBW). ``ebs_baseline_mbps`` / ``ebs_burst_mbps``: EBS-optimized bandwidth
    (MOTO ``EbsOptimizedInfo``; the burst lasts 30 minutes at least once a day, EBS-OPT).
    ``hbm_gib_per_second``: HBM bandwidth of all the instance's chips (INFERENTIA2).

    A start-up happens on a fresh (or freshly started) instance, whose credits are full, so the
    start-up model uses the burst figures: :attr:`startup_network_gib_per_second`,
    :attr:`startup_ebs_mib_per_second`.
    """

    instance_type: str
    network_gbps: float
    network_burst_gbps: float
    ebs_baseline_mbps: int
    ebs_burst_mbps: int
    hbm_gib_per_second: float
    sources: tuple[str, ...]

    @property
    def startup_network_gib_per_second(self) -> float:
        return self.network_burst_gbps * 1e9 / 8 / 2**30

    @property
    def startup_ebs_mib_per_second(self) -> float:
        return self.ebs_burst_mbps * 1e6 / 8 / 2**20


_HOST_IO_SOURCES = ("MOTO", "KARP-BW", "EC2-NETBW", "EBS-OPT", "INFERENTIA2")
_HBM_PER_INF2_CHIP_GIB_S = 820e9 / 2**30
# The source gives 820 GB/s per chip ("32GB of HBM2E ... with 820 GB/sec of bandwidth"): 763.7 GiB/s.

# inf2: network baseline 2.083 / 16.667 / 50 / 100 Gbps (KARP bandwidth table) with "Up to 15" and
# "Up to 25 Gigabit" for the two single-chip sizes (MOTO NetworkPerformance); EBS 1,250 baseline and
# 10,000 Mbps maximum on inf2.xlarge, 10,000 / 30,000 / 60,000 Mbps on the others (MOTO EbsInfo).
HOST_IO: dict[str, HostIo] = {
    h.instance_type: h
    for h in (
        HostIo("inf2.xlarge", 2.083, 15.0, 1_250, 10_000, 1 * _HBM_PER_INF2_CHIP_GIB_S, _HOST_IO_SOURCES),
        HostIo("inf2.8xlarge", 16.667, 25.0, 10_000, 10_000, 1 * _HBM_PER_INF2_CHIP_GIB_S, _HOST_IO_SOURCES),
        HostIo("inf2.24xlarge", 50.0, 50.0, 30_000, 30_000, 6 * _HBM_PER_INF2_CHIP_GIB_S, _HOST_IO_SOURCES),
        HostIo("inf2.48xlarge", 100.0, 100.0, 60_000, 60_000, 12 * _HBM_PER_INF2_CHIP_GIB_S, _HOST_IO_SOURCES),
    )
}  # fmt: skip


def host_io(instance_type: str) -> HostIo | None:
    """The host I/O figures of ``instance_type`` (``ml.`` prefix allowed), or None where the catalog has
    none published (every Trainium type: their serving start-up has no floor yet)."""
    return HOST_IO.get(get_instance(instance_type).key)


__all__ += ["HOST_IO", "HostIo", "host_io"]
