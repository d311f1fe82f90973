"""The lesson texts' figures: ``![what it shows](figures/NAME.svg)``, one per line.

On GitHub the link resolves beside the text; a notebook gets the SVG inlined (a
``data:`` URI: it needs no file next to the notebook, on Colab neither); the terminal
gets one line, ``(figure: what it shows)``, and keeps its text diagrams.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

FIGURE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>figures/(?P<name>[A-Za-z0-9_.-]+\.svg))\)")
"""A figure reference in a lesson's Markdown."""


def names(text: str) -> list[str]:
    """The figure files a text refers to, in order."""
    return [m["name"] for m in FIGURE.finditer(text)]


def plain(text: str) -> str:
    """Each figure as ``(figure: what it shows)``, for the terminal and text/plain."""
    return FIGURE.sub(lambda m: f"(figure: {m['alt']})", text)


def inline(text: str, lessons: Path) -> str:
    """Each figure as an inlined SVG image (a figure file that is missing stays a link)."""

    def data(m: re.Match) -> str:
        svg = lessons / m["src"]
        if not svg.is_file():
            return m[0]
        encoded = base64.b64encode(svg.read_bytes()).decode("ascii")
        return f"![{m['alt']}](data:image/svg+xml;base64,{encoded})"

    return FIGURE.sub(data, text)
