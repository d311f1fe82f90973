"""The notebook's colours: rich's output turned into HTML readable on light and dark themes.

No single colour reads well on both a white page and a near-black one (the best
compromise reaches about 4:1 on both, below WCAG's 4.5:1 for text), so every
coloured span carries a class and a compromise colour inline, and a stylesheet
gives each class the colour made for the theme the notebook shows: JupyterLab
marks its theme on ``body[data-jp-theme-light]``, VS Code's notebook output on
``body.vscode-light`` / ``body.vscode-dark``, Colab its dark theme on ``html[theme=dark]``. Where that stylesheet is not applied
(a renderer that drops ``<style>``, an unknown theme), the inline colour still
reads at 3.5:1 or more. ``tests/test_palette.py`` computes every contrast.

Text is never given a page background: what has no colour of its own takes the
theme's. Only a few marks (lesson 9's first violation) carry a background, with
a text colour chosen against it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from rich.console import Console
from rich.style import Style
from rich.text import Text


@dataclass(frozen=True)
class Colour:
    light: str
    """On a light theme (white page)."""
    dark: str
    """On a dark theme (JupyterLab's #111111, VS Code's #1e1e1e)."""
    fallback: str
    """Inline, where the theme is unknown: readable on both."""


PALETTE: dict[str, Colour] = {
    "red": Colour("#c5221f", "#ff7b72", "#e2483d"),
    "green": Colour("#1a7f37", "#3fb950", "#2f9a48"),
    "yellow": Colour("#8a5a00", "#d29922", "#b57a10"),
    "blue": Colour("#0b5cad", "#6cb6ff", "#3d86d6"),
    "magenta": Colour("#a3319c", "#e08ee0", "#c25ac0"),
    "cyan": Colour("#0a6f7a", "#39c5cf", "#1e959f"),
    "grey": Colour("#666666", "#a6a6a6", "#858585"),
}
"""Foreground colours by name; rich's sixteen standard colours map onto them."""

MARKS: dict[str, tuple[str, str]] = {
    "red": ("#ffffff", "#b3261e"),
    "yellow": ("#000000", "#f5c518"),
    "green": ("#ffffff", "#1a7f37"),
    "blue": ("#ffffff", "#0b5cad"),
    "magenta": ("#ffffff", "#a3319c"),
    "cyan": ("#000000", "#39c5cf"),
    "grey": ("#000000", "#c8c8c8"),
}
"""Text on a background of its own (``bold white on red``): (text, background), the same
on every theme."""

_STANDARD = {1: "red", 2: "green", 3: "yellow", 4: "blue", 5: "magenta", 6: "cyan", 8: "grey"}
"""rich's standard colour numbers (0–15; 9–14 the bright ones) → palette names. Black and
white (0, 7, 15) as text take the theme's own colour."""

LIGHT_THEMES = ('body[data-jp-theme-light="true"]', "body.vscode-light")
DARK_THEMES = ('body[data-jp-theme-light="false"]', "body.vscode-dark", "html[theme=dark]")
"""JupyterLab's and VS Code's markers, and Colab's (``html[theme=dark]``, which Colab's team
gave for outputs' CSS: googlecolab/colabtools#1214)."""
ROOT = "sc-out"
"""The class of the fragment's ``<pre>``: the stylesheet touches nothing outside it."""


def colour_name(colour) -> str | None:
    """The palette name of a rich colour (standard system), or None for the theme's own."""
    if colour is None or colour.number is None:
        return None
    number = colour.number - 8 if 9 <= colour.number <= 14 else colour.number
    return _STANDARD.get(number)


def stylesheet() -> str:
    """Per-theme colours for every palette class, scoped to the fragment."""
    rules = []
    for name, c in PALETTE.items():
        for themes, value in ((LIGHT_THEMES, c.light), (DARK_THEMES, c.dark)):
            selectors = ",".join(f"{t} .{ROOT} .sc-{name}" for t in themes)
            rules.append(f"{selectors}{{color:{value} !important}}")
    return "<style>" + "".join(rules) + "</style>"


def _span(text: str, style: Style | None) -> str:
    escaped = html.escape(text, quote=False)
    if not style:
        return escaped
    css, classes = [], []
    if style.bold:
        css.append("font-weight:bold")
    if style.italic:
        css.append("font-style:italic")
    if style.underline:
        css.append("text-decoration:underline")
    background = colour_name(style.bgcolor)
    if background is not None:
        fg, bg = MARKS[background]
        css += [f"color:{fg}", f"background-color:{bg}"]
    else:
        name = colour_name(style.color) or ("grey" if style.dim else None)
        if name is not None:
            classes.append(f"sc-{name}")
            css.append(f"color:{PALETTE[name].fallback}")
    if not css:
        return escaped
    cls = f' class="{" ".join(classes)}"' if classes else ""
    return f'<span{cls} style="{";".join(css)}">{escaped}</span>'


def to_html(ansi: str) -> str:
    """An HTML fragment of text rich wrote with the standard colour system."""
    text = Text.from_ansi(ansi, no_wrap=True, end="")
    body = "".join(_span(s.text, s.style) for s in text.render(Console(width=10**6), end=""))
    return (
        stylesheet() + f'<pre class="{ROOT}" style="font-family:Menlo,\'DejaVu Sans Mono\','
        "consolas,'Courier New',monospace;line-height:1.25;white-space:pre;margin:0\">"
        f'<code style="font-family:inherit">{body}</code></pre>'
    )


def to_plain(ansi: str) -> str:
    """The same text without any escape code."""
    plain = Text.from_ansi(ansi, no_wrap=True, end="").plain
    return "\n".join(line.rstrip(" ") for line in plain.split("\n"))  # rich pads table cells
