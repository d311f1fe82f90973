"""Grades each held-back program as a student would and classifies its feedback.

    python -m drafts.heldback.measure [--set heldback2] [--only lNN,...] [--json FILE]

Each program is written into a fresh workspace and graded with ``course grade
N.EXERCISE --json`` (the sandbox where the host has one). Its feedback is the failing
checks' messages and hints, the exercise's hint and error. Classes:

- ``passed``: the program passed (a false pass, or an entry that is not wrong);
- ``named``: a hint (not a bare message) holds one of the entry's ``cause`` words;
- ``hinted``: a hint, without a cause word: to be read by a person (partly, vague or
  a wrong cause);
- ``message``: no hint at all, only the checks' messages (what was measured).

The words were chosen before any feedback was seen; ``hinted`` rows are printed whole
for the reading.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from drafts.heldback import Held


def grade(h: Held) -> dict:
    home = Path(tempfile.mkdtemp(prefix=f"hb-{h.id}-"))
    lesson = int(h.module[1:3])
    course = [sys.executable, "-m", "course", "--home", str(home), "grade"]
    subprocess.run([*course, str(lesson), "--json"], capture_output=True)  # the workspace
    source = Path("solutions", f"{h.module}.py").read_text()
    (home / "exercises" / f"{h.module}.py").write_text(h.source(source))
    r = subprocess.run([*course, f"{lesson}.{h.exercise}", "--json"], capture_output=True,
                       text=True)  # fmt: skip
    try:
        (er,) = [e for les in json.loads(r.stdout)["lessons"] for e in les["exercises"]]
    except (ValueError, KeyError) as exc:
        return {"id": h.id, "class": "crash", "said": f"{exc}: {r.stderr[-400:]}"}
    failed = [c for c in er["checks"] if not c["passed"]]
    hints = [c.get("hint") or "" for c in failed] + [er.get("hint") or ""]
    if er.get("error"):
        hints.append(er["error"])
    messages = [c.get("message") or "" for c in failed]
    hint_text = " ".join(x for x in hints if x)
    if er["status"] == "passed":
        kind = "passed"
    elif any(w.lower() in hint_text.lower() for w in h.cause):
        kind = "named"
    elif hint_text.strip():
        kind = "hinted"
    else:
        kind = "message"
    return {"id": h.id, "kind": h.kind, "status": er["status"], "class": kind,
            "failed": [c["name"] for c in failed], "messages": messages, "hint": hint_text,
            "what": h.what, "cause": list(h.cause)}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", default="heldback", help="the package under drafts/")
    parser.add_argument("--only", default="")
    parser.add_argument("--ids", default="", help="only these ids (comma-separated)")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    held = importlib.import_module(f"drafts.{args.set}").collect()
    if args.only:
        held = [h for h in held if h.module[:3] in args.only.split(",")]
    if args.ids:
        held = [h for h in held if h.id in args.ids.split(",")]
    rows = []
    for h in held:
        row = grade(h)
        rows.append(row)
        print(f"{row['class']:8s} {h.id}", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["class"]] = counts.get(r["class"], 0) + 1
    print(f"\n{len(rows)} programs: {counts}")
    for r in rows:
        if r["class"] in ("hinted", "message", "crash", "passed"):
            print(f"\n[{r['class']}] {r['id']} ({r.get('kind')}): {r.get('what')}\n"
                  f"  cause words: {r.get('cause')}\n  messages: {r.get('messages')}\n"
                  f"  hint: {r.get('hint') or r.get('said')}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
