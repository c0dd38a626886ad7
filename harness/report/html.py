"""report.html: the report as one self-contained page, opened from disk with no server.

Built from report.md (one text, two renderings, so they never disagree) with
markdown-it: every plot is embedded as a base64 data URI, every table can be
sorted by clicking a column's header (a few lines of inline JavaScript), and
each `##` section is a <section> of its own (one per workload among them).
Nothing is fetched: no stylesheet, font or script from elsewhere. The page
marks <html data-ready="1"> once its script has run and counts script errors
in data-js-errors, so a headless browser can check it rendered cleanly.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from harness.util import io

FILENAME = "report.html"

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.6em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:2px 8px;text-align:left}
th{background:#f2f2f2;cursor:pointer;user-select:none}
th[data-order=asc]::after{content:" \\25B2"}th[data-order=desc]::after{content:" \\25BC"}
img{max-width:100%;height:auto}section{border-top:1px solid #ddd;margin-top:1.5em}
code{background:#f4f4f4;padding:0 3px}
"""

#: Sorts a table by the clicked header: numbers (with units such as 12x, 3 ms, +4%) by value.
SCRIPT = """
window.addEventListener('error',function(){var h=document.documentElement;
h.setAttribute('data-js-errors',String(Number(h.getAttribute('data-js-errors')||0)+1));});
function cellValue(td){var t=td.textContent.trim();var m=t.match(/^[+-]?[\\d,.]+(e[+-]?\\d+)?/i);
return m?parseFloat(m[0].replace(/,/g,'')):t.toLowerCase();}
function sortBy(th){var table=th.closest('table'),body=table.tBodies[0];if(!body)return;
var i=Array.prototype.indexOf.call(th.parentNode.children,th);
var asc=th.getAttribute('data-order')!=='asc';
Array.prototype.forEach.call(th.parentNode.children,function(h){h.removeAttribute('data-order');});
th.setAttribute('data-order',asc?'asc':'desc');
var rows=Array.prototype.slice.call(body.rows);
rows.sort(function(a,b){var x=cellValue(a.cells[i]),y=cellValue(b.cells[i]);
if(typeof x===typeof y){return (x<y?-1:x>y?1:0)*(asc?1:-1);}return (typeof x==='number'?-1:1)*(asc?1:-1);});
rows.forEach(function(r){body.appendChild(r);});}
document.addEventListener('DOMContentLoaded',function(){
document.querySelectorAll('table th').forEach(function(th){th.addEventListener('click',function(){sortBy(th);});});
document.documentElement.setAttribute('data-ready','1');});
"""


def render(markdown_text: str, report_dir: Path, title: str = "pe-harness report") -> str:
    """The page for `markdown_text`, whose links and images are relative to `report_dir`."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown_text)
    body = re.sub(r'<img src="([^"]+)"', lambda m: f'<img src="{_inline(m.group(1), report_dir)}"',
                  body)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style>"
            f"<script>{SCRIPT}</script></head>\n<body>\n{_sections(body)}\n</body></html>\n")


def write(markdown_text: str, report_dir: Path, title: str = "pe-harness report") -> Path:
    """report.html beside report.md."""
    return io.write_text(Path(report_dir) / FILENAME, render(markdown_text, report_dir, title))


def _inline(src: str, report_dir: Path) -> str:
    """A local image as a data URI (left as it is when it is not a readable local PNG/SVG)."""
    path = Path(report_dir) / html.unescape(src)
    kinds = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg"}
    if "://" in src or path.suffix.lower() not in kinds or not path.is_file():
        return src
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"data:{kinds[path.suffix.lower()]};base64,{data}"


def _sections(body: str) -> str:
    """Each <h2> and what follows it, up to the next <h2>, wrapped in a <section>."""
    parts = re.split(r"(?=<h2>)", body)
    return "".join(f"<section>\n{p}</section>\n" if p.startswith("<h2>") else p for p in parts)
