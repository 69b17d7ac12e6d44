"""One self-contained HTML page: inline SVG figures, tables and code, and no external URL.

Reports get attached to CI runs, mailed and opened offline, so everything a page shows is in
the file: each figure is matplotlib's SVG inlined in the document (text kept as text, so it is
small and searchable), the style is one <style> block, and there is no script.
"""

from __future__ import annotations

import html
import io
from collections.abc import Sequence
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

from hlotune.atomic import write_bytes_atomic

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
.subtitle { color: #666; margin-top: 0; }
figure { margin: 1.5em 0; } figure svg { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: 0.9em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.number { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
code { font-size: 0.9em; }
"""


class Page:
    """An HTML document built top to bottom; text is escaped, figures are inlined."""

    def __init__(self, title: str, subtitle: str = "") -> None:
        self.title = title
        self._body = [f"<h1>{html.escape(title)}</h1>"]
        if subtitle:
            self._body.append(f'<p class="subtitle">{html.escape(subtitle)}</p>')
        self._figures = 0

    def heading(self, text: str, level: int = 2) -> None:
        self._body.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def paragraph(self, text: str) -> None:
        self._body.append(f"<p>{html.escape(text)}</p>")

    def code(self, text: str) -> None:
        self._body.append(f"<pre><code>{html.escape(text)}</code></pre>")

    def figure(self, figure: Figure, caption: str) -> None:
        self._figures += 1
        self._body.append(f"<figure>{_svg(figure, f'figure{self._figures}')}"
                          f"<figcaption>{html.escape(caption)}</figcaption></figure>")

    def table(self, header: Sequence[str], rows: Sequence[Sequence[object]],
              numeric: Sequence[int] = ()) -> None:
        """Cells as given (format numbers first); columns in `numeric` are right-aligned, and
        None shows as a dash."""
        head = "".join(f"<th>{html.escape(str(cell))}</th>" for cell in header)
        body = "".join(
            "<tr>" + "".join(_cell(cell, i in numeric) for i, cell in enumerate(row)) + "</tr>"
            for row in rows
        )
        self._body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def render(self) -> str:
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(self.title)}</title><style>{_STYLE}</style></head>"
                f"<body>{''.join(self._body)}</body></html>\n")

    def write(self, path: Path) -> None:
        write_bytes_atomic(path, self.render().encode())


def _cell(value: object, numeric: bool) -> str:
    text = "-" if value is None else html.escape(str(value))
    return f'<td class="number">{text}</td>' if numeric else f"<td>{text}</td>"


def _svg(figure: Figure, salt: str) -> str:
    """The figure as an <svg> element: no XML prolog, no date, ids unique within the page."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        FigureCanvasSVG(figure).print_svg(buffer, metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]
