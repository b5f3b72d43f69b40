"""Documentation must match the code it describes, and its links must resolve."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def test_preflight_checks_table_is_current() -> None:
    """docs/cli.md lists exactly the preflight checks, their conditions and calls (run `make cli-docs`)."""
    from tools.cli_docs import BEGIN, DOC, END, render

    doc = DOC.read_text()
    recorded = doc[doc.index(BEGIN) + len(BEGIN) + 1 : doc.index(END)]
    assert recorded == render()


# -- the construct READMEs' API tables (tools/construct_docs.py) ----------------------------------


def test_construct_readme_api_tables_are_current() -> None:
    """Each construct README's generated tables match the docstrings (run `make construct-docs`)."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "tools.construct_docs"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_a_stale_api_table_fails_the_check_and_write_refreshes_it(monkeypatch: Any, tmp_path: Path) -> None:
    from tools import construct_docs

    for relative in construct_docs.DOCUMENTED:
        copy = tmp_path / relative
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text((REPO_ROOT / relative).read_text())
    monkeypatch.setattr(construct_docs, "REPO", tmp_path)
    assert construct_docs.main([]) == 0
    readme = tmp_path / "constructs/cdk_neuron/storage/README.md"
    fresh = readme.read_text()
    readme.write_text(fresh.replace("| `kms_key` |", "| `key` |", 1))
    assert construct_docs.main([]) == 1
    assert construct_docs.main(["--write"]) == 0
    assert readme.read_text() == fresh


def test_every_public_construct_has_api_tables() -> None:
    """A concrete construct exported by a construct package is documented in that package's README."""
    import importlib
    import inspect

    from constructs import Construct

    from tools.construct_docs import DOCUMENTED

    for package in ("training", "serving", "storage", "monitoring"):
        module = importlib.import_module(f"cdk_neuron.{package}")
        exported = {name: getattr(module, name) for name in module.__all__}
        constructs = {
            name
            for name, value in exported.items()
            if inspect.isclass(value) and issubclass(value, Construct) and not inspect.isabstract(value)
        }
        documented = {spec.split(":")[1] for spec in DOCUMENTED[f"constructs/cdk_neuron/{package}/README.md"]}
        assert constructs and constructs <= documented, (package, constructs - documented)


def test_docstring_markup_becomes_markdown() -> None:
    from tools.construct_docs import markdown, sentences, split_default

    assert markdown("a :class:`~cdk_neuron.storage.ICheckpointStore` and ``x=1``") == (
        "a `ICheckpointStore` and `x=1`"
    )
    assert markdown(":func:`cdk_neuron.planner.size_model`") == "`cdk_neuron.planner.size_model()`"
    assert sentences("One (a. B) e.g. C. Two. three") == ["One (a. B) e.g. C.", "Two. three"]
    assert split_default("the key. Default: a new key. Bring one for X.") == (
        "a new key",
        "the key. Bring one for X.",
    )
    assert split_default("Default None. At least one is required.") == ("None", "At least one is required.")
    assert split_default("no default here") == (None, "no default here")


def test_google_style_sections_are_read() -> None:
    from tools.construct_docs import google_section

    doc = """Summary.

    Args:
        environment: the name, e.g. ``"prod"``.
            Continued here.
        namespace: CloudWatch namespace. Default ``"CdkNeuron"``.

    Attributes:
        topic, key: the topic and its key. dashboard: the dashboard.
        rules: the rules (``A``,
        ``B``). log: the log.
    """
    assert google_section(doc, "Args") == {
        "environment": 'the name, e.g. ``"prod"``. Continued here.',
        "namespace": 'CloudWatch namespace. Default ``"CdkNeuron"``.',
    }
    assert google_section(doc, "Attributes") == {
        "topic": "the topic and its key.",
        "key": "the topic and its key.",
        "dashboard": "the dashboard.",
        "rules": "the rules (``A``, ``B``).",
        "log": "the log.",
    }


# -- links between the documents --------------------------------------------------------------------


def _documents() -> list[Path]:
    return [
        REPO_ROOT / "README.md",
        REPO_ROOT / "CHANGELOG.md",
        *sorted((REPO_ROOT / "docs").rglob("*.md")),
        *sorted((REPO_ROOT / "constructs" / "cdk_neuron").glob("*/README.md")),
        *sorted((REPO_ROOT / "examples").glob("*/README.md")),
    ]


def _anchors(document: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as '-', repeats numbered."""
    import re

    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in document.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        heading = re.match(r"^#{1,6} (.+)$", line)
        if heading and not fenced:
            slug = re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            found.add(slug if count == 0 else f"{slug}-{count}")
            seen[slug] = count + 1
    return found


def test_every_relative_link_and_anchor_resolves() -> None:
    """No README, changelog or doc links to a moved or deleted file or section."""
    import re

    broken = []
    for document in _documents():
        text = re.sub(r"```.*?```", "", document.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            destination = (document.parent / path).resolve() if path else document
            if not destination.exists():
                broken.append(f"{document.relative_to(REPO_ROOT)}: {target} (no such file)")
            elif anchor and destination.suffix == ".md" and anchor not in _anchors(destination):
                broken.append(f"{document.relative_to(REPO_ROOT)}: {target} (no such section)")
    assert broken == []


def test_every_warning_id_and_key_the_docs_name_exists_in_the_library() -> None:
    """Synth-warning ids (``@cdk-neuron/...:...``, ``cdk-neuron:...``), tags and context keys the
    docs name are spelled as the code spells them, so renaming one fails here until the docs follow."""
    import re

    sources = [
        *(REPO_ROOT / "constructs" / "cdk_neuron").rglob("*.py"),
        *(REPO_ROOT / "stacks").rglob("*.py"),
    ]
    code = "\n".join(p.read_text() for p in sources)  # the library's ids, and this app's own
    # The changelog and the migration guide may name ids that no longer exist.
    current = [d for d in _documents() if d.name not in ("CHANGELOG.md", "migration.md")]
    named = {
        match
        for document in current
        for match in re.findall(r"`(@cdk-neuron/[\w-]+:[\w-]+|cdk-neuron:[\w-]+)", document.read_text())
    }
    assert named
    assert sorted(name for name in named if name not in code) == []


def test_every_documented_class_member_has_a_description() -> None:
    """No empty cell in a construct README's API tables: every prop, attribute and method says what it is."""
    from tools.construct_docs import DOCUMENTED, undocumented

    missing = [name for specs in DOCUMENTED.values() for spec in specs for name in undocumented(spec)]
    assert missing == []
