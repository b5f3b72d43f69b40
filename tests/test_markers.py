"""tools/markers.py: the one way every generator rewrites its section of a hand-written document."""

from __future__ import annotations

import pytest

from tools.markers import replace_between

BEGIN, END = "<!-- x:begin -->", "<!-- x:end -->"


def test_only_the_text_between_the_markers_changes() -> None:
    doc = f"intro\n{BEGIN}\nold\nlines\n{END}\noutro\n"
    assert replace_between(doc, BEGIN, END, "new\n", where="doc.md") == f"intro\n{BEGIN}\nnew\n{END}\noutro\n"


@pytest.mark.parametrize("doc", ["no markers\n", f"{BEGIN}\nold\n", f"old\n{END}\n"])
def test_a_missing_marker_is_an_error_naming_the_document(doc: str) -> None:
    # A missing end marker used to make two generators drop everything after their section.
    with pytest.raises(ValueError, match=r"^doc\.md needs the markers <!-- x:begin --> and <!-- x:end -->$"):
        replace_between(doc, BEGIN, END, "new\n", where="doc.md")
