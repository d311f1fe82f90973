"""The lesson texts' figures: ``![what it shows](figures/NAME.svg)``, one per line.

On GitHub the link resolves beside the text; a notebook gets the SVG inlined (a
``data:`` URI: it needs no file next to the notebook, on Colab neither); the terminal
gets ``(figure: what it shows)`` and the SVG's path, and keeps its text diagrams.
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


def plain(text: str, lessons: Path | None = None) -> str:
    """Each figure as ``(figure: what it shows)``, for the terminal and text/plain; given
    the folder of the texts (``lessons``), followed by the SVG's path, indented on a line
    of its own (a code block: never wrapped, it copies whole) for a browser to open."""

    def line(m: re.Match) -> str:
        said = f"(figure: {m['alt']})"
        svg = None if lessons is None else lessons / m["src"]
        if svg is None or not svg.is_file():
            return said
        return f"{said[:-1]}; open it in a browser:)\n\n    {svg.resolve()}\n"

    return FIGURE.sub(line, text)


def inline(text: str, lessons: Path) -> str:
    """Each figure as an inlined SVG image (a figure file that is missing stays a link)."""

    def data(m: re.Match) -> str:
        svg = lessons / m["src"]
        if not svg.is_file():
            return m[0]
        encoded = base64.b64encode(svg.read_bytes()).decode("ascii")
        return f"![{m['alt']}](data:image/svg+xml;base64,{encoded})"

    return FIGURE.sub(data, text)
