"""The HTML report's page frame: its stylesheet and content-security policy, escaping, and the
section and table elements every part of the report is built from."""

from __future__ import annotations

import html
from collections.abc import Iterable

# The page loads nothing and runs nothing; the policy makes a browser refuse to, should anything
# untrusted (an LLM's reason, a web page's text) ever slip past the escaping.
CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;background:#f4f5f7;margin:0}
main{max-width:1280px;margin:0 auto;padding:24px}
h1{margin:0 0 4px;font-size:26px}h2{margin:0 0 12px;font-size:19px}h3{margin:0 0 8px;font-size:16px}
section,.run{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:16px 20px;margin:0 0 18px}
.run dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0 0}
dt{color:#5b6473}dd{margin:0}
nav{margin:8px 0 0}nav a{margin-right:14px;color:#0b5cad}
.scroll{overflow-x:auto}
table{border-collapse:collapse;margin:6px 0 10px}
th,td{border:1px solid #dde1e7;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.best,th.best{background:#e3f4e8;font-weight:600}
.metrics td{min-width:120px}
.badge{display:inline-block;margin-left:6px;padding:0 6px;border-radius:9px;background:#1e7b3c;color:#fff;
font-size:11px;font-weight:600}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));gap:18px;margin:0 0 18px}
.cards section{margin:0}
.about{color:#5b6473;font-size:12.5px;margin:0 0 8px;overflow-wrap:anywhere}
.matrix td{text-align:right;min-width:64px}
.box{border-left:5px solid #9aa3b0;background:#f7f8fa;padding:8px 12px;margin:10px 0;border-radius:4px}
.box h4{margin:0 0 4px;font-size:14px}.box ul{margin:0;padding-left:18px}.box li{margin:2px 0}
.box.fn{border-color:#c62828;background:#fdecec}.box.fn h4{color:#b71c1c;font-size:15.5px}
.box.fp{border-color:#e08a00;background:#fff5e0}
.why{color:#5b6473;overflow-wrap:anywhere}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
td.wrong,tr.wrong td{background:#fdecec}td.wrong{color:#b71c1c;font-weight:600}
td.text{max-width:520px;overflow-wrap:anywhere}
td code{white-space:nowrap;overflow-wrap:normal}.outcomes td:nth-child(-n+3){white-space:nowrap}
details{margin:8px 0}summary{cursor:pointer;font-weight:600}
.legend{list-style:none;padding:0;margin:0 0 8px;display:flex;flex-wrap:wrap;gap:6px 18px}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px}
.chart{width:100%;max-width:760px;height:auto}.chart text{font:11px system-ui,sans-serif;fill:#3c4350}
.chart .grid{stroke:#e3e6eb}.chart .axis{stroke:#5b6473}.chart .axis-title{font-size:12px;fill:#5b6473}
.chart .count{font-size:10px}.chart .gap text{fill:#9aa3b0;font-size:14px}
.note{color:#5b6473;font-size:12.5px;margin:4px 0 0}
.series-0{fill:#0072b2;background:#0072b2}.series-1{fill:#e69f00;background:#e69f00}
.series-2{fill:#009e73;background:#009e73}.series-3{fill:#cc79a7;background:#cc79a7}
.series-4{fill:#56b4e9;background:#56b4e9}.series-5{fill:#d55e00;background:#d55e00}
.series-6{fill:#f0e442;background:#f0e442}.series-7{fill:#000;background:#000}
"""


def e(value: object) -> str:
    """Escape for HTML text and attribute values alike: everything shown may be untrusted."""
    return html.escape("" if value is None else str(value), quote=True)


def document(title: str, body: Iterable[str]) -> str:
    """A whole page: the policy and the stylesheet inline, so it loads nothing from anywhere."""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{e(CONTENT_SECURITY_POLICY)}">\n'
            f'<meta name="referrer" content="no-referrer">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{e(title)}</title>\n"
            f"<style>{STYLE}</style>\n</head>\n<body>\n<main>\n" + "\n".join(body) + "\n</main>\n</body>\n</html>\n")


def note(text: str) -> str:
    return f'<p class="note">{e(text)}</p>'


def section(anchor: str, title: str, *content: str) -> str:
    return f'<section id="{e(anchor)}">\n<h2>{e(title)}</h2>\n' + "\n".join(content) + "\n</section>"


def table(headers: Iterable[str], rows: Iterable[str], css: str = "") -> str:
    """`rows` are finished <tr> elements; headers are plain text."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    return (f'<div class="scroll"><table class="{e(css)}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")
