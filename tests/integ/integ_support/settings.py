"""The fixed choices every suite deploys with (one place, so the snapshots and the docs agree).

The suites deploy to one Region, in subnets pinned to AZ IDs (the same in every account), so a
synthesized template names no account and no AZ name and the committed snapshots hold for anyone.
``CDK_NEURON_INTEG_REGION`` moves a run to another Region: the AZ IDs are then chosen from the
catalog's offerings, and the snapshots (made for the default) are not compared.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cdk_neuron import catalog

DEFAULT_REGION = "us-east-1"
# use1-az6 offers trn1.2xlarge, trn1.32xlarge and inf2.xlarge; use1-az4 offers trn1.32xlarge and
# inf2.xlarge (catalog.OFFERINGS). The first is the training AZ; the ALB needs the second.
DEFAULT_AZ_IDS = ("use1-az6", "use1-az4")
REGION_VARIABLE = "CDK_NEURON_INTEG_REGION"
ACCOUNT_VARIABLE = "CDK_NEURON_INTEG_ACCOUNT"
"""The account a run deploys to: the runner sets it (``sts:GetCallerIdentity``) before synthesizing."""
SNAPSHOT_ACCOUNT = "000000000000"
"""The account the committed snapshots are synthesized for; a run's own account is masked back to it."""

STACK_PREFIX = "CdkNeuronInteg"
"""Every integ stack's name starts with it: the runner's clean-up finds leftovers by it."""

# The training DLC the dev environment uses (cdk.json), in the suite's Region. It carries
# torch-neuronx, aws-neuronx-tools (neuron-ls) and the EFA user space.
TRAINING_IMAGE_REPOSITORY = "pytorch-training-neuronx"
TRAINING_IMAGE_TAG = "2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"
DLC_ACCOUNT = "763104351884"

# The model the serving suites serve: small, ungated (Apache-2.0), 0.49B parameters on its model
# card, two KV heads (so TP 2 divides them). Each serving suite compiles it with a ModelCompilation
# before its fleet exists and serves that artifact (integ_support/compiled.py, docs/integ.md).
MODEL_ID = "Qwen/Qwen2.5-0.5B-Instruct"
MODEL_PARAMETERS = 494_000_000
MODEL_TENSOR_PARALLEL = 2
MODEL_SEQUENCE_LENGTH = 4096


@dataclass(frozen=True)
class Settings:
    """Where a run deploys."""

    region: str = DEFAULT_REGION
    az_ids: tuple[str, ...] = DEFAULT_AZ_IDS
    account: str = SNAPSHOT_ACCOUNT
    """Only names the suites' artifact buckets (bucket names are global, so they carry it); the
    stacks themselves stay account-agnostic."""

    @property
    def training_az_id(self) -> str:
        return self.az_ids[0]

    @property
    def is_default(self) -> bool:
        """Whether these are the settings the committed snapshots were made with (any account: the
        snapshot comparison masks a run's account back to :data:`SNAPSHOT_ACCOUNT`)."""
        return (self.region, self.az_ids) == (DEFAULT_REGION, DEFAULT_AZ_IDS)

    def artifact_bucket(self, suite: str) -> str:
        """The name of ``suite``'s artifact bucket: ``cdk-neuron-integ-<account>-<region>-<suite>``.

        A fleet's ``artifact_uri`` names its bucket literally (its IAM read and the node's download
        are scoped to it), and bucket names are global: the account and Region keep it unique, the
        suite keeps suites of one run apart.
        """
        name = f"cdk-neuron-integ-{self.account}-{self.region}-{suite.replace('_', '-')}"
        if len(name) > 63:
            raise SystemExit(f"{name}: an S3 bucket name has at most 63 characters; shorten the suite name")
        return name

    @property
    def training_image(self) -> str:
        return f"{DLC_ACCOUNT}.dkr.ecr.{self.region}.amazonaws.com/{TRAINING_IMAGE_REPOSITORY}:{TRAINING_IMAGE_TAG}"

    @staticmethod
    def from_environment() -> Settings:
        region = os.environ.get(REGION_VARIABLE, "").strip() or DEFAULT_REGION
        account = os.environ.get(ACCOUNT_VARIABLE, "").strip() or SNAPSHOT_ACCOUNT
        if not (account.isdigit() and len(account) == 12):
            raise SystemExit(f"{ACCOUNT_VARIABLE}={account!r}: give the 12-digit account id")
        if region == DEFAULT_REGION:
            return Settings(account=account)
        return Settings(region=region, az_ids=choose_az_ids(region), account=account)


NEEDED_IN_TRAINING_AZ = ("trn1.2xlarge", "trn1.32xlarge", "inf2.xlarge")


def choose_az_ids(region: str) -> tuple[str, ...]:
    """Two AZ IDs of ``region``: the first offers every type the suites run, the second inf2.xlarge."""
    offered = {name: set(catalog.OFFERINGS.get(name, {}).get(region, ())) for name in NEEDED_IN_TRAINING_AZ}
    training = sorted(set.intersection(*offered.values()))
    if not training:
        raise SystemExit(
            f"{region}: no AZ ID offers all of {', '.join(NEEDED_IN_TRAINING_AZ)} in the catalog's offerings; "
            f"use {DEFAULT_REGION}"
        )
    others = sorted(offered["inf2.xlarge"] - {training[0]})
    if not others:
        raise SystemExit(f"{region}: the load balancer needs a second AZ ID offering inf2.xlarge")
    return (training[0], others[0])


def stack_name(suite: str, part: str = "") -> str:
    """``CdkNeuronInteg-TrainingSmoke`` (and ``-Assert`` for the assertion stack)."""
    camel = "".join(word.capitalize() for word in suite.split("_"))
    return f"{STACK_PREFIX}-{camel}" + (f"-{part}" if part else "")


# The model train_compile_serve fine-tunes, compiles and serves: HuggingFaceTB/SmolLM2-360M-Instruct
# (Apache-2.0, ungated), a Llama architecture without attention biases (NxD's checkpoint converter
# maps q/k/v weights only: a model with q/k/v biases, such as Qwen2, stops it with a KeyError;
# aws-neuron/neuronx-distributed @fbac349b, checkpoint_converter.py get_weight_key). 15 query and 5
# KV heads, so it is served at TP 1 (two replicas on an inf2.xlarge); 32 layers, hidden size 960,
# tied embeddings: 361,821,120 parameters counted from that shape.
TRAIN_MODEL_ID = "HuggingFaceTB/SmolLM2-360M-Instruct"
TRAIN_MODEL_PARAMETERS = 361_821_120
TRAIN_MODEL_LAYERS = 32
TRAIN_MODEL_KV_HEADS = 5
TRAIN_MODEL_SEQUENCE_LENGTH = 2048
