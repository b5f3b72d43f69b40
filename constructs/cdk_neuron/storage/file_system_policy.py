"""The checkpoint file system's resource policy and the client grants that go with it.

EFS evaluates an NFS client's identity policy and the file system policy together: "An 'allow'
permission on an action in either an IAM identity policy or a file system resource policy allows
access" (https://docs.aws.amazon.com/efs/latest/ug/iam-access-control-nfs-efs.html, retrieved
2026-11-30). Without any file system policy, EFS applies its default policy, which gives every
anonymous client that reaches a mount target full access.

So the policy here holds no Allow at all:
- it exists, which replaces EFS's allow-everyone default: a client that mounts without the
  ``iam`` option is anonymous, matches no Allow and is refused (IAM authorization is required);
- it denies every client action without TLS (``aws:SecureTransport``);
- access comes only from ``grant_*``, which put ClientMount (+ ClientWrite) on the grantee,
  conditioned on the access point.

EFS honours only ``aws:SecureTransport``, ``aws:SourceIp``, ``elasticfilesystem:AccessPointArn`` and
``elasticfilesystem:AccessedViaMountTarget`` for NFS clients (same page), which is why "IAM required"
is expressed by the absence of an Allow rather than by a condition.
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam

CLIENT_MOUNT = "elasticfilesystem:ClientMount"
CLIENT_WRITE = "elasticfilesystem:ClientWrite"
CLIENT_ROOT_ACCESS = "elasticfilesystem:ClientRootAccess"
CLIENT_ACTIONS = (CLIENT_MOUNT, CLIENT_WRITE, CLIENT_ROOT_ACCESS)

READ_ACTIONS = (CLIENT_MOUNT,)
READ_WRITE_ACTIONS = (CLIENT_MOUNT, CLIENT_WRITE)


def checkpoint_file_system_policy() -> iam.PolicyDocument:
    """Deny-only policy: TLS enforced, anonymous clients refused, access through grants only."""
    return iam.PolicyDocument(
        statements=[
            iam.PolicyStatement(
                sid="DenyClientsWithoutTls",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=list(CLIENT_ACTIONS),
                conditions={"Bool": {"aws:SecureTransport": "false"}},
            )
        ]
    )


def client_grant_conditions(access_point_arn: str) -> dict[str, dict[str, str]]:
    """Limit a grant to mounts through the store's mount targets and access point."""
    return {
        "Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"},
        "StringEquals": {"elasticfilesystem:AccessPointArn": access_point_arn},
    }
