"""Every Python example of docs/kernel-primitives.md runs and its assertions hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "kernel-primitives.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_page_has_an_example_per_primitive() -> None:
    assert len(BLOCKS) == 12


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_doc_example_runs(index: int) -> None:
    code = compile(BLOCKS[index], f"{DOC.name}[example {index + 1}]", "exec")
    exec(code, {"__name__": f"doc_example_{index + 1}"})
