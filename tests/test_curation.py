"""Curation steps on the shared data: decontamination gives exactly the hits a plain
implementation of open-r1's rule gives; dedup finds the duplicates GSM8K really has; a step's
output keeps its tasks as stored and records what it was made from, back to the source files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import taskpack
from taskpack.cli import main
from taskpack.curation import decontaminate, dedup, keep, lineage, overlap
from taskpack.curation.overlap import contamination, task_text
from taskpack.errors import TaskpackError
from taskpack.importer import import_sources

from .conftest import DATA, make_task
from .openr1_rule import plain_hits

GSM8K = {
    "train": [str(DATA / "gsm8k" / "train.jsonl")],
    "test": [str(DATA / "gsm8k" / "test.jsonl")],
}


@pytest.fixture(scope="module")
def gsm8k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("sets") / "gsm8k"
    import_sources(target, GSM8K, "gsm8k", name="gsm8k", version="1.0.0")
    return target


def _texts(ts: taskpack.TaskSet, split: str) -> dict[str, str]:
    return {t.id: task_text(t) for t in ts.split(split)}


@pytest.mark.parametrize("n", [8, 13])
def test_hits_equal_a_plain_implementation_on_gsm8k(gsm8k: Path, n: int) -> None:
    ts = taskpack.open(gsm8k)
    train, test = _texts(ts, "train"), _texts(ts, "test")
    hits = contamination(train, test, n)
    assert {(h.key, h.ref): h.ngram for h in hits} == plain_hits(train, test, n)
    assert len(hits) == {8: 83, 13: 4}[n]  # real overlaps between GSM8K's train and test


def test_hits_equal_a_plain_implementation_across_sets() -> None:
    """The Science Exam's questions against its own train split's answers' texts and
    HumanEval's prompts: other words, other lengths, and empty and short texts."""
    import csv

    with (DATA / "kaggle_llm_science_exam" / "train.csv").open() as f:
        rows = list(csv.DictReader(f))
    texts = {f"q{i}": r["prompt"] for i, r in enumerate(rows)}
    texts.update({"empty": "", "short": "the"})
    refs = {f"a{i}": " ".join(r[c] for c in "ABCDE") for i, r in enumerate(rows)}
    for n in (1, 3, 8):
        hits = contamination(texts, refs, n)
        assert {(h.key, h.ref): h.ngram for h in hits} == plain_hits(texts, refs, n)
    assert len(contamination(texts, refs, 3)) > 0


def test_a_hash_collision_never_makes_a_hit(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a multiplier of 0 every window hashes as its last word: every window ending in a
    word a reference has is a candidate, and only the word-by-word comparison tells."""
    texts = {"a": "one two three four five", "b": "nine two three four five"}
    refs = {"r": "zero two three four five", "s": "one two three four five"}
    monkeypatch.setattr(overlap, "_MULTIPLIER", overlap.np.uint64(0))
    hits = contamination(texts, refs, 4)
    assert {(h.key, h.ref): h.ngram for h in hits} == plain_hits(texts, refs, 4)
    assert {(h.key, h.ref) for h in hits} == {("a", "r"), ("a", "s"), ("b", "r"), ("b", "s")}


def test_decontaminate_drops_and_records_what_it_checked(gsm8k: Path, tmp_path: Path) -> None:
    report = decontaminate(gsm8k, [f"{gsm8k}:test"], splits=["train"])
    assert len(report.dropped["train"]) == 70 and "test" not in report.dropped
    hit = report.hits[0]
    assert (hit.key, hit.ref[1:]) == (("train", "train-00020"), ("test", "test-00632"))
    assert hit.ngram.startswith("bought stamps at the post office")
    m = keep(
        report.taskset, report.kept(), tmp_path / "clean", version="1.1.0", source=report.record
    )
    clean, original = taskpack.open(tmp_path / "clean"), taskpack.open(gsm8k)
    assert clean.split("train").ids() == [
        i for i in original.split("train").ids() if i not in set(report.dropped["train"])
    ]
    ours = original.split("train").digests()
    assert all(ours[i] == d for i, d in clean.split("train").digests().items())
    assert clean.split("test").digest == original.split("test").digest
    source = m.source
    assert source["operation"] == "decontaminate" and source["options"]["ngram"] == 8
    assert source["inputs"] == [{"ref": "gsm8k@1.0.0", "digest": original.manifest.digest}]
    assert source["checked_against"][0]["splits"] == ["test"]
    assert source["dropped"] == report.dropped and len(source["hits"]) == 83


def test_a_step_never_leaves_a_split_empty(gsm8k: Path, tmp_path: Path) -> None:
    report = decontaminate(gsm8k, [f"{gsm8k}:test"], splits=["test"])
    assert len(report.dropped["test"]) == 1319
    with pytest.raises(TaskpackError, match=r"split\(s\) test would be left empty"):
        keep(report.taskset, report.kept(), tmp_path / "out", version="1.1.0", source={})
    assert not (tmp_path / "out").exists()


def test_dedup_finds_gsm8ks_duplicates(gsm8k: Path) -> None:
    """GSM8K's train split has one pair that differs in a name only (Josie, Amanda)."""
    near = dedup(gsm8k)
    assert near.clusters == [[("train", "train-02483"), ("train", "train-06691")]]
    assert near.dropped == {"train": ["train-06691"]}
    assert dedup(gsm8k, near=False).clusters == []
    loose = dedup(gsm8k, threshold=0.5)
    assert len(loose.clusters) > 1 and near.clusters[0] in loose.clusters


def test_exact_duplicates_need_the_same_answer_too(tmp_path: Path) -> None:
    tasks = [
        make_task(0, prompt="What  is 1 + 1?", answer="2"),
        make_task(1, prompt="what is 1 +  1?", answer="2"),
        make_task(2, prompt="What is 1 + 1?", answer="3"),
        make_task(3, prompt="Something else entirely.", answer="2"),
    ]
    taskpack.write(tmp_path / "ts", {"train": tasks}, name="dups")
    report = dedup(tmp_path / "ts", near=False)
    assert report.clusters == [[("train", "t0"), ("train", "t1")]]


def test_a_kept_subset_carries_only_its_large_files(tmp_path: Path) -> None:
    big = [bytes([i]) * 100_000 for i in range(3)]
    tasks = [
        make_task(i, prompt=f"Task {i} " + "word " * i, files=[{"path": "big.bin", "data": b}])
        for i, b in enumerate(big)
    ]
    taskpack.write(tmp_path / "ts", {"train": tasks}, name="big")
    ts = taskpack.open(tmp_path / "ts")
    m = keep(ts, {"train": [0, 2]}, tmp_path / "out", version="0.2.0", source={"operation": "x"})
    shas = {hashlib.sha256(big[i]).hexdigest() for i in (0, 2)}
    assert set(m.splits["train"].blobs) == shas
    out = taskpack.open(tmp_path / "out")
    assert [t.file("big.bin").read_bytes() for t in out.split("train")] == [big[0], big[2]]
    assert taskpack.verify(out) == []


def test_lineage_goes_back_to_the_source_files(gsm8k: Path, tmp_path: Path) -> None:
    """Published, each step finds its input by digest in the registry; the chain ends at the
    files convert read, with their sha256."""
    runner = CliRunner()
    assert runner.invoke(main, ["publish", str(gsm8k)]).exit_code == 0
    result = runner.invoke(
        main,
        [
            "decontaminate",
            "gsm8k@1.0.0",
            "-s",
            "train",
            "--against",
            "gsm8k@1.0.0:test",
            "--drop",
            "-o",
            str(tmp_path / "clean"),
            "--publish",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "train: 7473 tasks, 70 contaminated, 7403 kept" in result.output
    assert "wrote gsm8k@1.1.0" in result.output
    result = runner.invoke(
        main, ["dedup", "gsm8k@1.1.0", "--drop", "-o", str(tmp_path / "dedup"), "--publish"]
    )
    assert result.exit_code == 0, result.output
    assert "train: train-02483, train-06691" in result.output
    chain = list(lineage("gsm8k@1.2.0"))
    assert [(link.depth, link.manifest and link.manifest.ref) for link in chain] == [
        (0, "gsm8k@1.2.0"),
        (1, "gsm8k@1.1.0"),
        (2, "gsm8k@1.0.0"),
    ]
    assert [link.manifest.source["operation"] for link in chain if link.manifest] == [
        "dedup",
        "decontaminate",
        "convert",
    ]
    files = chain[-1].manifest.source["files"] if chain[-1].manifest else []
    for entry in files:  # by name and sha256, never the host's path
        read = (DATA / "gsm8k" / entry["name"]).read_bytes()
        assert set(entry) == {"split", "name", "sha256"}
        assert entry["sha256"] == hashlib.sha256(read).hexdigest()
    shown = runner.invoke(main, ["lineage", "gsm8k@1.2.0"]).output
    assert "gsm8k@1.2.0" in shown and "dedup" in shown and "dropped train: 1" in shown
    assert "checked against gsm8k@1.0.0:test" in shown and "train.jsonl sha256:17f347dc" in shown
    as_json = json.loads(runner.invoke(main, ["lineage", "gsm8k@1.2.0", "--json"]).output)
    assert [e["depth"] for e in as_json] == [0, 1, 2]


def test_a_missing_input_is_said_not_found(gsm8k: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(gsm8k, copy)
    report = dedup(copy, near=False)
    keep(report.taskset, report.kept(), tmp_path / "out", version="1.1.0", source=report.record)
    shutil.rmtree(copy)
    chain = list(lineage(tmp_path / "out"))
    assert [link.manifest is None for link in chain] == [False, True]
    shown = CliRunner().invoke(main, ["lineage", str(tmp_path / "out")]).output
    assert "gsm8k@1.0.0 sha256:" in shown and "(not found here)" in shown


def test_the_viewer_and_the_hub_card_show_the_lineage(gsm8k: Path, tmp_path: Path) -> None:
    """The served home page shows the step and its inputs; the Hub's data card also lists the
    contamination report, the first hits with both ids and the shared n-gram."""
    import httpx

    from taskpack.registry.hub import dataset_card
    from taskpack.serve.app import Api, App, Catalog, background

    report = decontaminate(gsm8k, [f"{gsm8k}:test"], splits=["train"])
    keep(report.taskset, report.kept(), tmp_path / "clean", version="1.1.0", source=report.record)
    clean = taskpack.open(tmp_path / "clean")
    with background(App(api=Api(Catalog(clean)))) as url:
        home = httpx.get(f"{url}/").text
    assert "<h2>Lineage</h2>" in home and "decontaminate {&quot;ngram&quot;: 8" in home
    assert f"made from gsm8k@1.0.0 {taskpack.open(gsm8k).manifest.digest}" in home
    assert "dropped train: 70" in home
    card = dataset_card(clean, "me")
    assert "## Lineage" in card and "checked against gsm8k@1.0.0:test" in card
    assert "### Contamination report (83 hits)" in card
    assert "| train/train-00020 | gsm8k@1.0.0/test/test-00632 | bought stamps at" in card
    assert "63 more in the manifest." in card
    original = dataset_card(taskpack.open(gsm8k), "me")
    assert "convert from gsm8k" in original and "train.jsonl sha256:17f347dc" in original


WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if len(f"a{c}b".split()) == 2)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(
            alphabet=st.sampled_from([*"aAbB\u0130\u03a3\u03c3\u00e9\u00df", *WHITESPACE]),
            max_size=40,
        ),
        max_size=6,
    ),
    st.lists(
        st.text(alphabet=st.sampled_from([*"aAbB\u0130\u03a3\u03c3 \u3000\x85"]), max_size=40),
        max_size=6,
    ),
    st.integers(1, 4),
)
def test_hits_equal_the_plain_rule_on_any_text(texts: list[str], refs: list[str], n: int) -> None:
    """Every whitespace str.split() knows, letters whose lower case changes length or shape."""
    ours = {f"t{i}": t for i, t in enumerate(texts)}
    theirs = {f"r{i}": t for i, t in enumerate(refs)}
    hits = contamination(ours, theirs, n)
    assert {(h.key, h.ref): h.ngram for h in hits} == plain_hits(ours, theirs, n)


def test_the_cli_says_what_it_did_not_check_and_what_drop_needs(gsm8k: Path) -> None:
    runner = CliRunner()
    args = ["decontaminate", str(gsm8k), "-s", "train", "--against", f"{gsm8k}:test"]
    shown = runner.invoke(main, args)
    assert shown.exit_code == 0 and "test: 1319 tasks, not checked, all kept" in shown.output
    refused = runner.invoke(main, [*args, "--drop"])
    assert refused.exit_code == 2 and "give its folder with -o" in refused.output
    as_json = json.loads(runner.invoke(main, [*args, "--json"]).output)
    assert as_json["operation"] == "decontaminate" and len(as_json["dropped"]["train"]) == 70
    missing = runner.invoke(main, ["decontaminate", str(gsm8k), "--against", f"{gsm8k}:dev"])
    assert missing.exit_code == 1 and "has no split dev (train, test)" in missing.output
