"""docs/neuronlink.md and docs/neuronlink.svg are current: regenerated from the catalog and a real plan."""

from __future__ import annotations

import re

from cdk_neuron import catalog
from tools.neuronlink_diagram import BEGIN, DOC, END, SVG, doc_with_table, example, render


def test_the_picture_is_current() -> None:
    assert SVG.read_text() == render(*example()), "run: python -m tools.neuronlink_diagram --write"


def test_the_domain_table_is_current() -> None:
    text = DOC.read_text()
    assert BEGIN in text and END in text
    assert text == doc_with_table(text), "run: python -m tools.neuronlink_diagram --write"


def test_the_picture_draws_every_group_inside_one_ultraserver() -> None:
    plan, order = example()
    for start in range(0, len(order), plan.domain_group_instances):
        assert len({n.capacity_block_id for n in order[start : start + plan.domain_group_instances]}) == 1
    # Batch interleaved the UltraServers; the drawn order regroups them.
    assert [n.index for n in order] == [0, 2, 4, 6, 1, 3, 5, 7]


def test_every_source_key_the_doc_names_is_in_the_catalog() -> None:
    text = DOC.read_text()
    # Source keys have a hyphen or a digit (TRN3-ARCH, MOTO-525); bare acronyms such as (TP) are words.
    keys = {k for k in re.findall(r"\(([A-Z][A-Z0-9-]+)\)", text) if "-" in k or any(c.isdigit() for c in k)}
    assert keys, "the doc cites catalog sources by key"
    assert keys <= set(catalog.SOURCES), keys - set(catalog.SOURCES)


def test_sources_cite_public_material_only() -> None:
    # The repository never cites files outside itself: every source is a URL or a public repository.
    for source in catalog.SOURCES.values():
        assert "/work/" not in source.citation and "/tmp/" not in source.citation, source.key
        assert source.date, source.key
