"""The serving certificate is issued, in the Region, and not about to expire."""

from __future__ import annotations

from datetime import datetime, timedelta

from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.preflight.base import Check, CheckContext, Row
from cdk_neuron.validation import CERTIFICATE_ARN

CERTIFICATE_WARN_DAYS = 30


def check_certificate(ctx: CheckContext) -> list[Row]:
    if ctx.env.serving is None:
        return []
    arn = ctx.env.serving.certificate_arn
    if arn is None or ctx.env.serving.backend != "ec2":
        return []
    match = CERTIFICATE_ARN.match(arn)
    region = match["region"] if match else ctx.env.region
    if region != ctx.env.region:
        return [
            ctx.row(
                "certificate",
                arn,
                "FAIL",
                f"the certificate is in {region}; a load balancer uses certificates of its own Region "
                f"({ctx.env.region}): request or import one there",
            )
        ]
    try:
        certificate = ctx.client("acm").describe_certificate(CertificateArn=arn)["Certificate"]
    except Exception as error:
        if error_code(error) != "ResourceNotFoundException":
            raise
        return [ctx.row("certificate", arn, "FAIL", f"no such certificate in {region} for this account")]
    status = certificate.get("Status", "?")
    domain = certificate.get("DomainName", "?")
    if status == "PENDING_VALIDATION":
        return [
            ctx.row(
                "certificate",
                arn,
                "FAIL",
                f"{domain} is PENDING_VALIDATION: create the validation records (the command shows them); "
                "the listener cannot use it until it is ISSUED",
                f"aws acm describe-certificate --certificate-arn {arn} --region {region} "
                "--query Certificate.DomainValidationOptions",
            )
        ]
    if status != "ISSUED":
        return [
            ctx.row("certificate", arn, "FAIL", f"{domain} is {status}: request or import a new certificate")
        ]
    not_after = certificate.get("NotAfter")
    if isinstance(not_after, datetime) and not_after - ctx.now() < timedelta(days=CERTIFICATE_WARN_DAYS):
        return [
            ctx.row(
                "certificate",
                arn,
                "WARN",
                f"{domain} expires {not_after.date().isoformat()}: renew or replace it "
                + (
                    "(an imported certificate does not renew itself)"
                    if certificate.get("Type") == "IMPORTED"
                    else ""
                ),
            )
        ]
    expires = f", expires {not_after.date().isoformat()}" if isinstance(not_after, datetime) else ""
    return [ctx.row("certificate", arn, "PASS", f"ISSUED for {domain} in {region}{expires}")]


CHECK = Check(
    "certificate",
    check_certificate,
    passes_when="`serving.certificate_arn` is ISSUED, in the environment's Region (a load balancer uses its own Region's certificates) and not expiring within 30 days",
    calls=("acm:DescribeCertificate",),
)
