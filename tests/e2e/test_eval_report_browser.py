"""The HTML evaluation report in real headless Chromium: it loads with no error, asks for nothing
outside itself (its Content Security Policy would log any attempt), and renders a full page."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from firmsift.domain.evaluation import LabelledDomain, Outcome, OutcomeKind
from firmsift.entrypoints.eval.document import report_document
from firmsift.entrypoints.eval.report import write_reports
from firmsift.services.evaluation_run import CandidateSpec
from tests.support.node_tools import require_node_package
from tests.support.processes import REPO

pytestmark = pytest.mark.e2e

CHECK_SCRIPT = REPO / "tests" / "support" / "browser_check.mjs"

CPG = ["kraftheinz.example", "unilever.example", "nestle.example", "colgate.example", "pepsico.example",
       "danone.example", "mondelez.example", "hershey.example", "generalmills.example", "kelloggs.example"]
OTHERS = ["salesforce.example", "caterpillar.example", "maersk.example", "deloitte.example", "boeing.example",
          "stripe.example", "walmart.example", "shopify.example", "siemens.example", "accenture.example"]


def _browser() -> tuple[str, str]:
    """Paths of `node` and Chromium, or skip (fail on CI) saying what to install."""
    chromium = os.environ.get("FIRMSIFT_CHROMIUM", "/usr/bin/chromium")
    no_chromium = [] if os.access(chromium, os.X_OK) else [
        f"no Chromium at {chromium}: `apt-get install chromium` or set FIRMSIFT_CHROMIUM"]
    return require_node_package("playwright-core", "HTML report browser check", *no_chromium), chromium


def _realistic_document() -> dict[str, Any]:
    """Three candidates over twenty domains, each wrong in its own way, so that they disagree."""
    labels = [LabelledDomain(d, True, "packaged food" if i % 3 == 0 else "") for i, d in enumerate(CPG)]
    labels += [LabelledDomain(d, False, "retailer, sells CPG" if d == "walmart.example" else "")
               for d in OTHERS]

    def outcomes(seed: int, price: float | None) -> list[Outcome]:
        found = []
        for i, item in enumerate(labels):
            roll = (i * 7 + seed * 5) % 20
            seconds = dict(search_seconds=0.3 + (i % 5) * 0.11, llm_seconds=0.8 + ((i + seed) % 7) * 0.37,
                           prompt_tokens=1800 + i * 13, completion_tokens=60 + i % 9,
                           cost_usd=None if price is None else price * (1800 + i * 13), from_cache=i % 6 == 0)
            if roll == 0:
                found.append(Outcome(item.domain, item.label, OutcomeKind.FAILED, error="LLM timed out after 30 s",
                                     search_seconds=0.4, cost_usd=price and 0.0))
            elif roll == 1 and seed == 2:
                found.append(Outcome(item.domain, item.label, OutcomeKind.UNPARSEABLE,
                                     error="no verdict in </td><script>alert(1)</script>|x the answer",
                                     **seconds))
            else:
                wrong = roll in (2, 3 + seed)
                found.append(Outcome(item.domain, item.label, OutcomeKind.ANSWERED, answer=item.label != wrong,
                                     confidence=1 + (i + seed) % 5 if wrong else 3 + (i + seed) % 3,
                                     reason=f"{item.domain} {'makes' if item.label else 'does not make'} "
                                            "consumer packaged goods <img src=x onerror=alert(2)>",
                                     **seconds))
        return found

    specs = [CandidateSpec("gpt-4o-mini · v3 · searxng", "openai/gpt-4o-mini", None, "cpg", "v3", "searxng"),
             CandidateSpec("llama3.1-8b · v3 · searxng", "ollama/llama3.1:8b", "http://127.0.0.1:11434", "cpg",
                           "v3", "searxng"),
             CandidateSpec("gpt-4o-mini · v2 · homepage", "openai/gpt-4o-mini", None, "cpg", "v2", "homepage")]
    return report_document(
        labels_file="labels/cpg-2026-05.csv", labels=labels, evidence="replayed", precheck=False,
        started_at=datetime(2026, 5, 1, 9, 30, tzinfo=timezone.utc),
        finished_at=datetime(2026, 5, 1, 9, 34, 12, tzinfo=timezone.utc),
        specs=specs,
        outcomes={specs[0].name: outcomes(0, 0.15e-6), specs[1].name: outcomes(1, None),
                  specs[2].name: outcomes(2, 0.15e-6)},
    )


def _png_facts(path: Path) -> tuple[int, int, int]:
    """Width, height and the number of distinct pixels in the first rows of a PNG (stdlib only)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset, idat, header = 8, b"", b""
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, "an unexpected PNG layout"
    step = 3 if colour == 2 else 4
    stride = width * step
    raw = zlib.decompress(idat)
    assert len(raw) == height * (stride + 1), "truncated image data"
    # Unfiltering is sequential and slow in pure Python: the top rows (the page header, its text and
    # background) suffice to tell a rendered page from a blank one.
    previous, pixels = bytearray(stride), set()
    for row in range(min(height, 300)):
        kind, line = raw[row * (stride + 1)], bytearray(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up, corner = previous[i], previous[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        pixels.update(bytes(line[i:i + step]) for i in range(0, stride, step))
        previous = line
    return width, height, len(pixels)


def test_the_html_report_renders_in_chromium_without_errors(tmp_path: Path) -> None:
    node, chromium = _browser()
    document = _realistic_document()
    assert len(document["disagreements"]) >= 5
    report = next(p for p in write_reports(document, tmp_path / "report") if p.name == "report.html")
    screenshot = tmp_path / "report.png"

    run = subprocess.run([node, str(CHECK_SCRIPT), report.as_uri(), str(screenshot)], cwd=REPO,
                         capture_output=True, text=True, timeout=180, env={**os.environ, "FIRMSIFT_CHROMIUM": chromium})

    assert run.returncode == 0, f"browser check failed:\n{run.stdout}\n{run.stderr}"
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["errors"] == []
    assert summary["requests"] == []
    assert summary["title"] == "firmsift evaluation — labels/cpg-2026-05.csv"
    assert summary["h1"] == "firmsift evaluation"
    assert summary["height"] > 1500
    width, height, colours = _png_facts(screenshot)
    assert width >= 1280 and height > 800 and height >= summary["height"] - 1
    assert colours > 10, "the screenshot is (nearly) a single colour"
