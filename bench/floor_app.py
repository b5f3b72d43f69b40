"""The benchmark's floor: an App with one empty Stack, synthesized exactly like the real app.

Same interpreter, same context (the CDK CLI's CDK_CONTEXT_JSON), same validator settings: what is
left is the fixed cost of starting jsii, importing aws_cdk and running the built-in validator.
The built-in validator rejects a template without resources (F0001), so that one finding is
acknowledged here; without it the floor would fail instead of measuring anything.
"""

from __future__ import annotations

import aws_cdk as cdk

app = cdk.App()
stack = cdk.Stack(app, "Floor")
cdk.Validations.of(stack).acknowledge(
    cdk.Acknowledgment(
        id="CloudFormation-Validate::F0001", reason="the benchmark floor is an empty stack on purpose"
    )
)
app.synth()
