"""The evaluation report as one self-contained HTML page (report.html): its sections, in reading order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from firmsift.entrypoints.eval import figures as fig
from firmsift.entrypoints.eval import report_page as page
from firmsift.entrypoints.eval.report_chart import confidence_chart, series_class
from firmsift.entrypoints.eval.report_page import e


def render_html(document: Mapping[str, Any]) -> str:
    candidates = document["candidates"]
    body = [
        _run_header(document),
        page.section("metrics", "Metrics", _metrics_table(document), page.note(fig.METRICS_NOTE)),
        page.section("precheck", "Pre-check", _precheck(document)),
        '<div class="cards">' + "".join(_candidate(i, c) for i, c in enumerate(candidates)) + "</div>",
        page.section("confidence", "Accuracy by stated confidence", _chart(candidates)),
        page.section("latency", "Latency and cost", _latency_table(candidates)),
        page.section("disagreements", f"Disagreements ({len(document['disagreements'])})", _disagreements(document)),
        page.section("outcomes", "Outcomes per domain", *(_outcomes(c) for c in candidates)),
    ]
    return page.document(f"firmsift evaluation — {document['labels_file']}", body)


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
    matrix = page.table(["", "label yes", "label no"], [
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
    return (f"<ul>{lines}</ul>" + page.note("Ended by the pre-check: not sent to the LLM. ✗ marks a pre-check miss.")
            + page.table(["domain", "label", "site status", "reason"], rows))


def _chart(candidates: Sequence[Mapping[str, Any]]) -> str:
    legend = "".join(f'<li><span class="swatch {series_class(i)}"></span>{e(c["name"])}</li>'
                     for i, c in enumerate(candidates))
    levels = [level["confidence"] for level in candidates[0]["metrics"]["by_confidence"]] if candidates else []
    figures = page.table(["candidate", *(f"confidence {level}" for level in levels)], [
        f"<tr><td>{e(c['name'])}</td>"
        + "".join(f'<td class="num">{e(fig.confidence_cell(level))}</td>' for level in c["metrics"]["by_confidence"])
        + "</tr>" for c in candidates])
    return (f'<ul class="legend">{legend}</ul>{confidence_chart(candidates)}'
            + page.note("Each bar is the share of right answers among those given at that confidence; the figure "
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
    return page.table(["candidate", "domain p50", "domain p95", "LLM p50", "LLM p95", "LLM calls", "cached",
                   "prompt tokens", "completion tokens", "cost"], rows)


def _disagreements(document: Mapping[str, Any]) -> str:
    rows = document["disagreements"]
    if not rows:
        return page.note("Every candidate gave the same verdict on every labelled domain.")
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
    return (page.note("✗ marks a verdict that disagrees with the label; the figure in brackets is the confidence.")
            + page.table(["domain", "label", "notes", *names], body))


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
    table = page.table(["domain", "label", "site", "verdict", "source", "quote", "search", "LLM", "tokens in/out",
                        "cost", "reason / error"], rows, "outcomes")
    return (f"<details><summary>{e(candidate['name'])}: {len(outcomes)} domains, {wrong} wrong</summary>"
            f"{table}</details>")
