"""The evaluation report as one self-contained HTML page (report.html): no script, no external resource."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from firmsift.entrypoints.eval import figures as fig
from firmsift.entrypoints.eval.report_chart import confidence_chart, series_class

# The page loads nothing and runs nothing; the policy makes a browser refuse to, should anything
# untrusted (an LLM's reason, a web page's text) ever slip past the escaping.
CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

_STYLE = """
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


def render_html(document: Mapping[str, Any]) -> str:
    candidates = document["candidates"]
    body = [
        _run_header(document),
        _section("metrics", "Metrics", _metrics_table(document), _note(fig.METRICS_NOTE)),
        _section("precheck", "Pre-check", _precheck(document)),
        '<div class="cards">' + "".join(_candidate(i, c) for i, c in enumerate(candidates)) + "</div>",
        _section("confidence", "Accuracy by stated confidence", _chart(candidates)),
        _section("latency", "Latency and cost", _latency_table(candidates)),
        _section("disagreements", f"Disagreements ({len(document['disagreements'])})", _disagreements(document)),
        _section("outcomes", "Outcomes per domain", *(_outcomes(c) for c in candidates)),
    ]
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{e(CONTENT_SECURITY_POLICY)}">\n'
            f'<meta name="referrer" content="no-referrer">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>firmsift evaluation — {e(document['labels_file'])}</title>\n"
            f"<style>{_STYLE}</style>\n</head>\n<body>\n<main>\n" + "\n".join(body) + "\n</main>\n</body>\n</html>\n")


def _note(text: str) -> str:
    return f'<p class="note">{e(text)}</p>'


def _section(anchor: str, title: str, *content: str) -> str:
    return f'<section id="{e(anchor)}">\n<h2>{e(title)}</h2>\n' + "\n".join(content) + "\n</section>"


def _table(headers: Iterable[str], rows: Iterable[str], css: str = "") -> str:
    """`rows` are finished <tr> elements; headers are plain text."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    return (f'<div class="scroll"><table class="{e(css)}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _run_header(document: Mapping[str, Any]) -> str:
    labelled = document["labelled"]
    facts = [
        ("Labels file", e(document["labels_file"])),
        ("Labelled domains", f"{int(labelled['total'])} ({int(labelled['yes'])} yes, {int(labelled['no'])} no)"),
        ("Evidence", e(document["evidence"])),
        ("Started", e(document["started_at"])),
        ("Duration", e(fig.duration(document["seconds"]))),
    ]
    links = [("metrics", "Metrics"), ("precheck", "Pre-check"), ("confidence", "Confidence"), ("latency", "Latency and cost"),
             ("disagreements", "Disagreements"), ("outcomes", "Outcomes")]
    return ('<header class="run"><h1>firmsift evaluation</h1><dl>'
            + "".join(f"<dt>{title}</dt><dd>{value}</dd>" for title, value in facts) + "</dl><nav>"
            + "".join(f'<a href="#{anchor}">{title}</a>' for anchor, title in links) + "</nav></header>")


def _metrics_table(document: Mapping[str, Any]) -> str:
    """Candidates side by side, one column each, so a figure reads across; the best accuracy stands out."""
    best = fig.best_accuracy(document)
    candidates = document["candidates"]
    leading = [best is not None and c["metrics"]["accuracy"] == best for c in candidates]
    columns = [fig.metric_row(c) for c in candidates]
    head = "".join(f'<th{_BEST[lead]}>{e(c["name"])}{_BADGE if lead else ""}</th>'
                   for c, lead in zip(candidates, leading))
    rows = "".join(f"<tr><th>{e(title)}</th>"
                   + "".join(f'<td class="num{" best" if lead else ""}">{e(column[row])}</td>'
                             for column, lead in zip(columns, leading)) + "</tr>"
                   for row, title in enumerate(fig.METRIC_HEADERS) if row)
    return (f'<div class="scroll"><table class="metrics"><thead><tr><th>metric</th>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>")


_BEST = {True: ' class="best"', False: ""}
_BADGE = '<span class="badge">best accuracy</span>'


def _candidate(index: int, candidate: Mapping[str, Any]) -> str:
    m, confusion = candidate["metrics"], candidate["metrics"]["confusion"]
    unanswered = fig.unanswered_by_label(candidate)
    about = " · ".join(f"{title} {e(candidate[key])}" for key, title in (
        ("model", "model"), ("api_base", "at"), ("classifier", "classifier"),
        ("prompt_version", "prompt"), ("search", "search")) if candidate.get(key) is not None)
    about += f" · LLM retries {e(fig.retries(candidate))}"
    matrix = _table(["", "label yes", "label no"], [
        f'<tr><th>predicted yes</th><td>{int(confusion["true_positives"])}</td>'
        f'<td>{int(confusion["false_positives"])}</td></tr>',
        f'<tr><th>predicted no</th><td>{int(confusion["false_negatives"])}</td>'
        f'<td>{int(confusion["true_negatives"])}</td></tr>',
        f'<tr><th>no answer</th><td>{unanswered["yes"]}</td><td>{unanswered["no"]}</td></tr>',
    ], "matrix")
    by_domain = fig.outcomes_by_domain(candidate)
    boxes = [
        _domain_box("fn", "False negatives: CPG companies missed", m["false_negatives"], by_domain),
        _domain_box("fp", "False positives", m["false_positives"], by_domain),
        _domain_box("", "Unparseable answers", m["unparseable"], by_domain),
        _domain_box("", "Failed (no answer)", m["failed"], by_domain),
    ]
    if m.get("search_failed"):
        boxes.append(_domain_box("", "Asked without evidence (search failed)", m["search_failed"], by_domain))
    if m.get("precheck_ended"):
        boxes.append(_domain_box("", "Ended by the pre-check (not scored)", m["precheck_ended"], by_domain))
    return (f'<section id="candidate-{index}"><h3><span class="swatch {series_class(index)}"></span>'
            f'{e(candidate["name"])}</h3><p class="about">{about}</p>{matrix}' + "".join(boxes) + "</section>")


def _domain_box(css: str, title: str, domains: Sequence[str], by_domain: Mapping[str, Mapping[str, Any]]) -> str:
    items = []
    for domain in domains:
        outcome = by_domain.get(domain)
        confidence = outcome.get("confidence") if outcome else None
        stated = f" (confidence {int(confidence)})" if confidence is not None else ""
        note = fig.domain_note(outcome)
        raw = fig.raw_output(outcome)
        shown = (f"<details><summary>what the model wrote</summary><pre>{e(raw)}</pre></details>"
                 if raw is not None else "")
        items.append(f"<li><code>{e(domain)}</code>{stated}"
                     + (f' <span class="why">— {e(note)}</span>' if note else "") + shown + "</li>")
    listed = f"<ul>{''.join(items)}</ul>" if items else '<p class="note">none</p>'
    return f'<div class="box {e(css)}"><h4>{e(title)} ({len(domains)})</h4>{listed}</div>'


def _precheck(document: Mapping[str, Any]) -> str:
    """The run's pre-check: domains by status, then the domains it ended; a yes label among them
    (a pre-check miss, a CPG company written off) is marked like a wrong answer."""
    lines = "".join(f"<li>{e(line)}</li>" for line in fig.precheck_lines(document))
    ended = (document.get("precheck") or {}).get("ended") or []
    if not ended:
        return f"<ul>{lines}</ul>"
    rows = [f'<tr{_WRONG_ROW[r["label"] != "yes"]}><td><code>{e(r["domain"])}</code></td>'
            f'<td>{e(r["label"])}{" ✗" if r["label"] == "yes" else ""}</td><td>{e(r["site_status"])}</td>'
            f'<td class="text">{e(r["reason"])}</td></tr>' for r in ended]
    return (f"<ul>{lines}</ul>" + _note("Ended by the pre-check: not sent to the LLM. ✗ marks a pre-check miss.")
            + _table(["domain", "label", "site status", "reason"], rows))


def _chart(candidates: Sequence[Mapping[str, Any]]) -> str:
    legend = "".join(f'<li><span class="swatch {series_class(i)}"></span>{e(c["name"])}</li>'
                     for i, c in enumerate(candidates))
    levels = [level["confidence"] for level in candidates[0]["metrics"]["by_confidence"]] if candidates else []
    figures = _table(["candidate", *(f"confidence {level}" for level in levels)], [
        f"<tr><td>{e(c['name'])}</td>"
        + "".join(f'<td class="num">{e(fig.confidence_cell(level))}</td>' for level in c["metrics"]["by_confidence"])
        + "</tr>" for c in candidates])
    return (f'<ul class="legend">{legend}</ul>{confidence_chart(candidates)}'
            + _note("Each bar is the share of right answers among those given at that confidence; the figure "
                       "above it is how many answers that was. A dash marks a level with no answers.")
            + f"<details><summary>Figures behind the chart</summary>{figures}</details>")


def _latency_table(candidates: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for c in candidates:
        m, latency = c["metrics"], c["metrics"]["latency"]
        cells = [fig.seconds(latency[key]) for key in ("domain_p50", "domain_p95", "llm_p50", "llm_p95")]
        cells += [f"{m['llm_calls']:,}", f"{m['cached_completions']:,}", f"{m['prompt_tokens']:,}",
                  f"{m['completion_tokens']:,}", fig.cost(m["cost_usd"], m.get("cost_note"))]
        rows.append(f"<tr><td>{e(c['name'])}</td>" + "".join(f'<td class="num">{e(x)}</td>' for x in cells) + "</tr>")
    return _table(["candidate", "domain p50", "domain p95", "LLM p50", "LLM p95", "LLM calls", "cached",
                   "prompt tokens", "completion tokens", "cost"], rows)


def _disagreements(document: Mapping[str, Any]) -> str:
    rows = document["disagreements"]
    if not rows:
        return _note("Every candidate gave the same verdict on every labelled domain.")
    names = [c["name"] for c in document["candidates"]]
    body = []
    for row in rows:
        verdicts = {v["candidate"]: v for v in row["verdicts"]}
        cells = []
        for name in names:
            verdict = verdicts.get(name)
            if verdict is None:
                cells.append("<td>—</td>")
            elif verdict["verdict"] == row["label"]:
                cells.append(f"<td>{e(fig.verdict_cell(verdict))}</td>")
            else:
                cells.append(f'<td class="wrong">{e(fig.verdict_cell(verdict))} ✗</td>')
        body.append(f"<tr><td><code>{e(row['domain'])}</code></td><td>{e(row['label'])}</td>"
                    f'<td class="text">{e(row["notes"])}</td>' + "".join(cells) + "</tr>")
    return (_note("✗ marks a verdict that disagrees with the label; the figure in brackets is the confidence.")
            + _table(["domain", "label", "notes", *names], body))


_WRONG_ROW = {True: "", False: ' class="wrong"'}


def _outcomes(candidate: Mapping[str, Any]) -> str:
    outcomes = candidate["outcomes"]
    # A domain the pre-check ended is no answer of the model: not marked wrong (the pre-check section lists it).
    right = [o["correct"] or o["verdict"] == "ended" for o in outcomes]
    rows = [
        f'<tr{_WRONG_ROW[ok]}><td><code>{e(o["domain"])}</code></td>'
        f'<td>{e(o["label"])}</td><td>{e(fig.site_cell(o))}</td>'
        f'<td>{e(fig.verdict_cell(o))}{"" if ok else " ✗"}</td>'
        f'<td>{e(o["source"])}</td><td>{e(fig.quote_cell(o))}</td>'
        f'<td class="num">{e(fig.seconds(o["search_seconds"]))}</td>'
        f'<td class="num">{e(fig.seconds(o["llm_seconds"]))}</td>'
        f'<td class="num">{int(o["prompt_tokens"])}/{int(o["completion_tokens"])}</td>'
        f'<td class="num">{e(fig.cost(o["cost_usd"], o.get("cost_note")))}{" (cached)" if o["from_cache"] else ""}</td>'
        f'<td class="text">{e(fig.domain_note(o))}</td></tr>'
        for o, ok in zip(outcomes, right)
    ]
    wrong = right.count(False)
    table = _table(["domain", "label", "site", "verdict", "source", "quote", "search", "LLM", "tokens in/out", "cost",
                    "reason / error"], rows, "outcomes")
    return (f"<details><summary>{e(candidate['name'])}: {len(outcomes)} domains, {wrong} wrong</summary>"
            f"{table}</details>")
