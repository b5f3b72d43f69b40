"""The job and serving images exist and their tags resolve."""

from __future__ import annotations

from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.preflight.base import Check, CheckContext, Row
from cdk_neuron.deployment import Deployment
from cdk_neuron.validation import ECR_REGISTRY, IMAGE_URI


def _images(env: Deployment) -> list[tuple[str, str]]:
    """(who runs it, image URI) for every container image the stacks deploy."""
    images: list[tuple[str, str]] = []
    if env.training is not None and env.training.engine == "batch" and env.training.job_image:
        images.append(("training job", env.training.job_image))
    if env.serving is None:
        return images
    engine = env.serving.engine
    if env.serving.image is not None:
        role = "serving" if env.serving.backend == "ec2" else "SageMaker serving"
        images.append((role, env.serving.image))
    elif env.serving.backend == "ec2":
        images.append(("serving", engine.image.uri(env.region)))
    elif engine.sagemaker_image is not None:
        images.append(("SageMaker serving", engine.sagemaker_image.uri(env.region)))
    return images


def _image_row(ctx: CheckContext, role: str, uri: str) -> Row:
    match = IMAGE_URI.match(uri)
    registry = ECR_REGISTRY.match(match["registry"]) if match else None
    if match is None or registry is None:
        host = match["registry"] if match else uri.split("/", 1)[0]
        return ctx.row(
            "image",
            uri,
            "INFO",
            f"{role}: not checked: {host} is not Amazon ECR, whose tags preflight cannot resolve; pull it once "
            "to check (docker manifest inspect)",
            f"docker manifest inspect {uri}",
        )
    account, region, repository = registry["account"], registry["region"], match["repository"]
    image_id = {"imageDigest": match["digest"]} if match["digest"] else {"imageTag": match["tag"]}
    reference = match["digest"] or f"tag {match['tag']}"
    ecr = ctx.clients("ecr", region)
    request = {"registryId": account, "repositoryName": repository, "imageIds": [image_id]}
    listing = (
        f"aws ecr describe-images --registry-id {account} --repository-name {repository} --region {region} "
        "--query 'sort_by(imageDetails,&imagePushedAt)[-5:].imageTags'"
    )
    try:
        details = ecr.describe_images(**request)["imageDetails"]
        digest = details[0].get("imageDigest", "?") if details else "?"
        return ctx.row("image", uri, "PASS", f"{role}: {reference} resolves to {digest}")
    except Exception as error:
        code = error_code(error)
        if code == "ImageNotFoundException":
            return ctx.row(
                "image",
                uri,
                "FAIL",
                f"{role}: {reference} not found in {repository}: push it, or pin a tag that exists "
                "(the command lists the newest)",
                listing,
            )
        if code == "RepositoryNotFoundException":
            return ctx.row(
                "image",
                uri,
                "FAIL",
                f"{role}: no repository {repository} in registry {account} ({region}): check the image URI",
            )
        if code not in ("AccessDeniedException", "AccessDenied"):
            raise
    # Pull-only registries (the AWS Deep Learning Containers) allow BatchGetImage, not DescribeImages.
    try:
        pulled = ecr.batch_get_image(**request)
    except Exception as error:
        if error_code(error) not in ("AccessDeniedException", "AccessDenied"):
            raise
        return ctx.row(
            "image",
            uri,
            "WARN",
            f"{role}: cannot check: registry {account} allows neither ecr:DescribeImages nor ecr:BatchGetImage to "
            "these credentials; the nodes' role gets pull access from the stack",
        )
    if pulled.get("images"):
        digest = pulled["images"][0].get("imageId", {}).get("imageDigest", "?")
        return ctx.row("image", uri, "PASS", f"{role}: {reference} resolves to {digest} (BatchGetImage)")
    failure = (pulled.get("failures") or [{}])[0]
    return ctx.row(
        "image",
        uri,
        "FAIL",
        f"{role}: {reference} cannot be pulled from {repository}: "
        f"{failure.get('failureCode', '?')} {failure.get('failureReason', '')}".rstrip()
        + "; pin a tag that exists",
    )


def check_images(ctx: CheckContext) -> list[Row]:
    return [_image_row(ctx, role, uri) for role, uri in _images(ctx.env)]


CHECK = Check(
    "image",
    check_images,
    passes_when="the training job image and the serving image exist and their tag resolves to a digest. Registries that allow pulling but not describing (the AWS Deep Learning Containers) are checked with `BatchGetImage`. An image outside ECR (ghcr.io, public.ecr.aws) is INFO, never PASS: preflight cannot resolve its tag",
    calls=("ecr:DescribeImages", "ecr:BatchGetImage"),
)
