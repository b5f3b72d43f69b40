"""boto3 sessions for the commands that talk to AWS, and the errors they can meet.

``boto3`` is imported inside :class:`Boto3Clients` only, so ``plan`` and ``cost`` never load it.
Tests hand the commands their own factory (moto or botocore Stubber clients) instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdk_neuron import __version__

ClientFactory = Callable[[str, str], Any]
"""``(service_name, region) -> boto3 client``."""

NO_CREDENTIALS = (
    "No AWS credentials found: set AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), "
    "or run `aws sso login`, and retry."
)
REJECTED_CREDENTIALS = (
    "AWS rejected the credentials ({code}): they are expired or invalid; refresh them "
    "(for example `aws sso login`) and retry."
)

# Error codes AWS returns when the caller's credentials, not the request, are the problem.
CREDENTIAL_ERROR_CODES = frozenset(
    {
        "ExpiredToken",
        "ExpiredTokenException",
        "RequestExpired",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "AuthFailure",
        "SignatureDoesNotMatch",
        "InvalidAccessKeyId",
    }
)


class CredentialsProblem(Exception):
    """No usable credentials: the CLI prints the message (one sentence) and exits with code 3."""


class AwsLookupError(Exception):
    """Something the command needs is missing in the account (a stack output, a job): exit code 1."""


def error_code(error: BaseException) -> str:
    """The AWS error code of a botocore ``ClientError`` (empty for anything else)."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def error_summary(error: BaseException) -> str:
    """``Code: message`` of a ``ClientError``, or the exception text."""
    response = getattr(error, "response", None)
    if isinstance(response, dict) and "Error" in response:
        err = response["Error"]
        return f"{err.get('Code', 'Error')}: {err.get('Message', '')}".rstrip(": ")
    return str(error) or type(error).__name__


def credentials_problem(error: BaseException) -> CredentialsProblem | None:
    """Translate botocore's credential failures into one sentence; None for other errors."""
    import botocore.exceptions as bx

    if isinstance(error, CredentialsProblem):
        return error
    if isinstance(error, (bx.NoCredentialsError, bx.PartialCredentialsError)):
        return CredentialsProblem(NO_CREDENTIALS)
    if isinstance(error, bx.ProfileNotFound):
        return CredentialsProblem(f"{error}: check AWS_PROFILE / --profile and ~/.aws/config, and retry.")
    sso_errors: tuple[type[Exception], ...] = tuple(
        getattr(bx, name)
        for name in ("TokenRetrievalError", "SSOTokenLoadError", "UnauthorizedSSOTokenError")
        if hasattr(bx, name)
    )
    if sso_errors and isinstance(error, sso_errors):
        return CredentialsProblem(REJECTED_CREDENTIALS.format(code=type(error).__name__))
    if isinstance(error, bx.ClientError) and error_code(error) in CREDENTIAL_ERROR_CODES:
        return CredentialsProblem(REJECTED_CREDENTIALS.format(code=error_code(error)))
    return None


class Boto3Clients:
    """A :data:`ClientFactory` over one boto3 session; each (service, region) client is made once.

    Credentials are checked when the first client is made, so a machine without any gets one
    clear sentence before a single request is sent.
    """

    def __init__(self, profile: str | None = None) -> None:
        self._profile = profile
        self._session: Any = None
        self._clients: dict[tuple[str, str], Any] = {}

    def _boto_session(self) -> Any:
        if self._session is None:
            import boto3

            session = boto3.session.Session(profile_name=self._profile)
            if session.get_credentials() is None:
                raise CredentialsProblem(NO_CREDENTIALS)
            self._session = session
        return self._session

    def __call__(self, service: str, region: str) -> Any:
        key = (service, region)
        if key not in self._clients:
            from botocore.config import Config

            config = Config(
                user_agent_extra=f"cdk-neuron/{__version__}",
                retries={"mode": "standard", "max_attempts": 5},
                connect_timeout=10,
                read_timeout=30,
            )
            self._clients[key] = self._boto_session().client(service, region_name=region, config=config)
        return self._clients[key]
