"""Generated documentation must match the code it describes."""

from __future__ import annotations

from cdk_support import REPO_ROOT


def test_acknowledgment_audit_trail_is_current() -> None:
    """docs/acknowledgments.md lists exactly the acknowledgments the app makes (run `make acknowledgments`)."""
    from tools.acknowledgments import BEGIN, DOC, END, shipped_section

    doc = DOC.read_text()
    recorded = doc[doc.index(BEGIN) + len(BEGIN) + 1 : doc.index(END)]
    assert recorded == shipped_section()


def test_every_acknowledgment_gives_a_reason() -> None:
    import json

    import aws_cdk as cdk

    from stacks.app_builder import build_app
    from tools.acknowledgments import collect

    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    app = cdk.App(context=context)
    build_app(app)
    rows = collect(app, context["environments"])
    assert rows
    for env, path, rule, reason in rows:
        assert "[" not in rule or rule.endswith("]"), (env, path, rule)
        assert len(reason) >= 40, f"{env}/{path} {rule}: reason too thin: {reason!r}"


def test_deploy_rules_reference_is_current() -> None:
    """docs/deploy-rules.md lists exactly the deploy rules and their metadata (run `make deploy-rules-doc`)."""
    from tools.deploy_rules_doc import BEGIN, DOC, END, render

    doc = DOC.read_text()
    recorded = doc[doc.index(BEGIN) + len(BEGIN) + 1 : doc.index(END)]
    assert recorded == render()
