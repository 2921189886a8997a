from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).parents[2] / "docs" / "meta.md"


def test_the_example_in_docs_meta_runs() -> None:
    text = DOC.read_text()
    (code,) = re.findall(r"<!-- meta-example -->\n```python\n(.*?)```", text, re.S)
    exec(compile(code, str(DOC), "exec"), {})
