"""decode.json from decode.txt: the rows ``tpu_decode.py --json`` writes, read back from
its printed lines (the run of 2026-12-05 was cut off before it wrote its JSON).

    python benchmarks/tpu_v5e/from_text.py     # rewrites benchmarks/tpu_v5e/decode.json

Each row: form, batch, model_ms (the lesson's decode_step_time for one v5e chip),
ms (a step's share of 10 queued back to back, median of 5) or error, gb_accessed
(``cost_analysis``'s bytes accessed) and temp_gb (XLA's temporaries), as printed:
two decimals.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINE = re.compile(
    r"^(?P<form>[\w-]+) +B= *(?P<batch>\d+): model +(?P<model>[\d.]+) ms, measured +"
    r"(?:(?P<ms>[\d.]+) ms \([\d.]+x\)|(?P<error>.*?)); XLA reads\+writes (?P<gb>[\d.]+) GB, "
    r"temporaries (?P<temp>[\d.]+) GB$"
)


def rows(text: str) -> list[dict]:
    """The measured rows of ``tpu_decode.py``'s printout (its first line, the model's
    size, is skipped; any other line that is not a row is an error)."""
    out = []
    for line in text.splitlines()[1:]:
        m = LINE.match(line)
        if m is None:
            raise ValueError(f"not a row of tpu_decode.py: {line!r}")
        row = {"form": m["form"], "batch": int(m["batch"]), "model_ms": float(m["model"])}
        if m["ms"] is not None:
            row |= {"ms": float(m["ms"]), "gb_accessed": float(m["gb"]),
                    "temp_gb": float(m["temp"])}  # fmt: skip
        else:
            row["error"] = m["error"]
        out.append(row)
    return out


def main() -> int:
    doc = rows((HERE / "decode.txt").read_text())
    (HERE / "decode.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"decode.json: {len(doc)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
