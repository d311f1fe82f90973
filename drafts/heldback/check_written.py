"""Checks the held-back set without grading it: ids unique and not in the catalogue, each
patch applies once, each variant module compiles and imports. ``python -m
drafts.heldback.check_written`` from the repository root."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

from drafts.heldback import collect
from tests.mistakes import MISTAKES


def main() -> int:
    held = collect()
    ids = [h.id for h in held]
    assert len(ids) == len(set(ids)), "duplicate ids"
    assert not set(ids) & {m.id for m in MISTAKES}, "an id of tests/mistakes"
    for h in held:
        source = h.source(Path("solutions", f"{h.module}.py").read_text())
        path = Path(tempfile.mkdtemp()) / f"{h.module}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(h.module, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert hasattr(module, h.exercise), (h.id, h.exercise)
    by = {}
    for h in held:
        by[h.module] = by.get(h.module, 0) + 1
    print(f"{len(held)} held-back programs, all apply and import: {by}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
