"""The notebook's colours read on JupyterLab's and VS Code's light and dark themes:
WCAG contrast, computed here, for every colour the HTML uses."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from course import palette

LIGHT = {"JupyterLab light": "#ffffff", "VS Code Light Modern / Light+": "#ffffff"}
DARK = {
    "JupyterLab dark (layout-color0)": "#111111",
    "JupyterLab dark (layout-color1)": "#212121",
    "VS Code Dark+": "#1e1e1e",
    "VS Code Dark Modern": "#1f1f1f",
}
"""The page colours a notebook's output sits on in each theme."""
COLAB_DARK = {"a lighter dark page than those (margin for Colab's dark theme)": "#383838"}


def luminance(colour: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""

    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_contrast_formula_reproduces_the_issues_measurement():
    """#800000 (rich's default red) on JupyterLab's dark page: 1.7:1, as issue 38 measured."""
    assert contrast("#800000", "#111111") == pytest.approx(1.7, abs=0.05)
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)


def every_colour_ansi() -> str:
    """Text in every colour and style rich's standard system can write."""
    console = Console(file=io.StringIO(), color_system="standard", width=200)
    names = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"]
    for name in names + [f"bright_{n}" for n in names] + ["grey50", "#ff8800", "rgb(10,200,30)"]:
        console.print(f"[{name}]{name}[/] [bold {name}]b[/] [dim {name}]d[/] [on {name}]o[/]")
    console.print("[dim]dim[/] [bold white on red]mark[/] [black on yellow]waits[/]")
    return console.file.getvalue()


def rules(html: str) -> list[tuple[str, str]]:
    """(selector, colour) of every rule in the fragment's stylesheet."""
    (sheet,) = re.findall(r"<style>(.*?)</style>", html, flags=re.S)
    return re.findall(r"([^{}]+)\{color:(#[0-9a-f]{6}) !important\}", sheet)


def test_every_colour_of_the_html_reads_on_its_themes():
    html = palette.to_html(every_colour_ansi())
    light = dark = 0
    for selectors, colour in rules(html):
        for selector in selectors.split(","):
            assert selector.endswith(tuple(f".{palette.ROOT} .sc-{n}" for n in palette.PALETTE))
            if selector.startswith(palette.LIGHT_THEMES):
                pages, light = LIGHT, light + 1
            else:
                assert selector.startswith(palette.DARK_THEMES), selector
                pages, dark = {**DARK, **COLAB_DARK}, dark + 1
            for page, background in pages.items():
                assert contrast(colour, background) >= 4.5, (selector, colour, page)
    assert light == 2 * len(palette.PALETTE)  # every class: JupyterLab's and VS Code's light
    assert dark == 3 * len(palette.PALETTE)  # and their dark themes, and Colab's
    body = html.split("</style>", 1)[1]
    spans = re.findall(r'<span( class="sc-(\w+)")? style="([^"]*)"', body)
    assert spans
    for _, name, style in spans:
        colours = dict(re.findall(r"(color|background-color):(#[0-9a-f]{6})", style))
        if "background-color" in colours:  # a mark: its text against its own background
            assert contrast(colours["color"], colours["background-color"]) >= 4.5, style
        elif "color" in colours:  # the inline colour where no theme rule applies
            assert name, style  # every themed colour carries its class
            for page, background in {**LIGHT, **DARK}.items():
                assert contrast(colours["color"], background) >= 3.5, (style, page)
    # nothing paints a page: no body or pre background, no colour outside a span
    assert "background" not in body.replace("background-color:", "")
    assert not re.search(r"<pre[^>]*color", body)


def test_every_standard_colour_keeps_a_hue():
    html = palette.to_html(every_colour_ansi())
    for name in ("red", "green", "yellow", "blue", "magenta", "cyan"):
        assert f'class="sc-{name}"' in html, name


def test_text_plain_has_no_escape_codes():
    plain = palette.to_plain(every_colour_ansi())
    assert "\x1b" not in plain and "mark" in plain
