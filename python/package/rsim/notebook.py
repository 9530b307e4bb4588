"""rsim in a notebook (issue 44 item 3): a Result shows as HTML tables (the summary first), and
rsim.plot's figures display inline. Pure Python over the binding; no third-party imports."""
import base64
import html
import os

# the summary's columns a reader wants first (any others follow in the table's own order)
FIRST = ("point", "platform", "network", "layers", "flops", "params", "bytes", "time_s", "derated_time_s", "limit", "bound")
MAX_ROWS = 50  # rows of a table shown inline; the rest are counted (Result.rows has them all)


def _cell(v):
    return html.escape(str(v))


def table_html(rows, title, max_rows=MAX_ROWS):
    """an HTML table of a list of dicts, its first columns those of FIRST that it has"""
    if not rows:
        return f"<p><b>{html.escape(title)}</b>: no rows</p>"
    cols = list(rows[0].keys())
    cols = [c for c in FIRST if c in cols] + [c for c in cols if c not in FIRST]
    head = "".join(f"<th>{_cell(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{_cell(r.get(c, ''))}</td>" for c in cols) + "</tr>" for r in rows[:max_rows])
    more = f"<p>… {len(rows) - max_rows} more rows</p>" if len(rows) > max_rows else ""
    return (f"<p><b>{html.escape(title)}</b> ({len(rows)} row{'s' if len(rows) != 1 else ''})</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}")


def result_html(r):
    """Result._repr_html_: the scenario, the summary, serving.csv's rows when it served, then the first layer rows"""
    served = table_html(r.serving, "serving") if getattr(r, "serving", None) else ""
    return (f"<div><p>rsim result of <code>{_cell(r.scenario)}</code></p>" + table_html(r.summary, "summary") + served +
            table_html(r.rows, "layers", max_rows=20) + "</div>")


class Figure(str):
    """a figure file rsim.plot wrote (a str: its path), displayed inline in Jupyter"""

    def _read(self, ext):
        p = os.path.splitext(self)[0] + ext
        if os.path.isfile(p):
            with open(p, "rb") as f:
                return f.read()
        return None

    def _repr_png_(self):
        return self._read(".png")

    def _repr_svg_(self):
        svg = self._read(".svg")
        return svg.decode("utf-8") if svg is not None else None


class Figures(list):
    """the names of the files rsim.plot wrote into `folder`, in order; in a notebook every figure
    shows inline (PNG, else SVG)"""

    def __init__(self, names, folder):
        super().__init__(names)
        self.folder = folder

    def figures(self):
        """each figure once (its PNG and SVG are one figure), as a Figure: its path, shown inline"""
        seen, out = set(), []
        for f in self:
            stem, ext = os.path.splitext(f)
            if ext in (".png", ".svg") and stem not in seen:
                seen.add(stem)
                out.append(Figure(os.path.join(self.folder, f)))
        return out

    def _repr_html_(self):
        parts = []
        for f in self.figures():
            png = f._repr_png_()
            if png is not None:
                parts.append(f'<figure><img src="data:image/png;base64,{base64.b64encode(png).decode()}"/>'
                             f"<figcaption>{_cell(os.path.basename(f))}</figcaption></figure>")
            elif (svg := f._repr_svg_()) is not None:
                parts.append(f"<figure>{svg}<figcaption>{_cell(os.path.basename(f))}</figcaption></figure>")
        return "<div>" + "".join(parts) + "</div>" if parts else None
