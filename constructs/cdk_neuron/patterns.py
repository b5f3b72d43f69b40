"""Identifier formats validated in more than one place (configuration and constructs), defined once."""

from __future__ import annotations

import re

# EC2 capacity reservation ids: "cr-" and 17 hex digits (older ids have 8).
RESERVATION_ID = re.compile(r"^cr-(?:[0-9a-f]{8}|[0-9a-f]{17})$")
# arn:<partition>:resource-groups:<region>:<account>:group/<name>
RESOURCE_GROUP_ARN = re.compile(
    r"^arn:aws(?:-cn|-us-gov)?:resource-groups:[a-z]{2}(?:-[a-z]+)+-\d:\d{12}:group/[A-Za-z0-9_.-]{1,300}$"
)
# Deliberately loose: SNS confirms the address; this only catches obvious typos.
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
