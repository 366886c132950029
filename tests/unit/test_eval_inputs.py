"""The labels and candidates files of `firmsift eval`: what is accepted, and every problem named."""

from __future__ import annotations

from pathlib import Path

import pytest

from firmsift.domain.evaluation import LabelledDomain
from firmsift.entrypoints.eval.inputs import CandidateDeclaration, EvalInputError, read_candidates, read_labels

SHIPPED = Path(__file__).resolve().parents[2] / "eval" / "cpg-labels.csv"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_labels_are_normalized_and_keep_their_notes(tmp_path: Path) -> None:
    path = write(tmp_path, "l.csv", "\ufeffDomain , LABEL,notes\nhttps://www.Acme.com/x,Yes,\"a note, with a comma\"\n"
                                    "b.com,no,\nc.com,TRUE,\nd.com,0,\n")
    assert read_labels(path) == [LabelledDomain("acme.com", True, "a note, with a comma"), LabelledDomain("b.com", False),
                                 LabelledDomain("c.com", True), LabelledDomain("d.com", False)]


def test_an_empty_labels_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EvalInputError, match="no labelled domains"):
        read_labels(write(tmp_path, "l.csv", "domain,label\n"))


def test_the_problem_list_is_capped_but_counted(tmp_path: Path) -> None:
    rows = "".join(f"d{i}.com,perhaps\n" for i in range(30))
    with pytest.raises(EvalInputError, match=r"30 problem\(s\)[\s\S]*and 10 more"):
        read_labels(write(tmp_path, "l.csv", "domain,label\n" + rows))


def test_the_shipped_labelled_set_is_valid_balanced_and_annotated() -> None:
    labels = read_labels(SHIPPED)
    yes = sum(item.label for item in labels)
    assert len(labels) >= 100
    assert 0.4 <= yes / len(labels) <= 0.6
    assert sum(bool(item.notes) for item in labels) >= 40  # the hard calls say why


def test_candidates_are_read_with_paths_relative_to_their_file(tmp_path: Path) -> None:
    path = write(tmp_path, "c.toml", '[[candidate]]\nname = "mini-v2"\nmodel = "openai/gpt-5.4-mini"\n'
                                     'classifier_file = "prompts/cpg-v2.toml"\nsearch = "searxng"\nmax_tokens = 300\n'
                                     'input_cost_per_million = 1\noutput_cost_per_million = 2.5\n'
                                     '[[candidate]]\nname = "plain"\n'
                                     '[[candidate]]\nname = "chained"\nsearch = "Homepage, searxng"\n')
    first, second, chained = read_candidates(path)
    assert first == CandidateDeclaration("mini-v2", model="openai/gpt-5.4-mini",
                                         classifier_file=(tmp_path / "prompts" / "cpg-v2.toml").resolve(),
                                         search="searxng", max_tokens=300, input_cost_per_million=1.0,
                                         output_cost_per_million=2.5)
    assert second == CandidateDeclaration("plain")
    assert chained == CandidateDeclaration("chained", search="homepage,searxng")  # as FIRMSIFT_SEARCH_PROVIDER spells it


@pytest.mark.parametrize(("text", "problem"), [
    ('[[candidate]]\nname = "a"\n[[candidate]]\nname = "a"\n', "candidate name 'a' is used twice"),
    ('[[candidate]]\nname = "a"\nclassifier = "cpg"\nclassifier_file = "x.toml"\n', "not both"),
    ('[[candidate]]\nname = "a"\ninput_cost_per_million = 1\n', "give both"),
    ('[[candidate]]\nname = "a"\ninput_cost_per_million = -1\noutput_cost_per_million = 1\n', "not negative"),
    ('[[candidate]]\nname = "a"\ninput_cost_per_million = nan\noutput_cost_per_million = 1\n', "must be finite"),
    ('[[candidate]]\nname = "a"\noutput_cost_per_million = inf\ninput_cost_per_million = 1\n', "must be finite"),
    ('[[candidate]]\nname = "a"\nmodel = ""\n', "model is empty"),
    ('[[candidate]]\nname = "a"\nsearch = "searxng,searxng"\n', "search 'searxng,searxng': entry 2 ('searxng') repeats"),
    ('[[candidate]]\nname = "a"\napi_base = "not a url"\n', "must be an http:// or https:// URL"),
    ('[[candidate]]\nname = "a"\nmax_tokens = true\n', "max_tokens has the wrong type"),
    ('[[candidate]]\nname = "a"\nmax_tokens = 4\n', "at least 16"),
    ('[[candidate]]\nmodel = "m"\n', "name '' must be"),
    ('[[candidate]]\nname = "a"\napi_key = "sk-secret"\n', "unknown key 'api_key'"),
    ('name = "a"\n', "declare at least one [[candidate]] table"),
    ("[[candidate]\n", "not valid TOML"),
])
def test_each_candidate_problem_is_named(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(EvalInputError) as raised:
        read_candidates(write(tmp_path, "c.toml", text))
    assert problem in str(raised.value)


def test_a_missing_candidates_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(EvalInputError, match="no such file"):
        read_candidates(tmp_path / "none.toml")
