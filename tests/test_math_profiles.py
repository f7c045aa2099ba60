"""The math profiles (`taskpack grade --profile`, `--compare`): each equal to its reference's own
code on MATH-500's completions as models write them, right and wrong (tests/math_replies.py),
and what a grade run does with them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.importer import import_sources
from taskpack.rewards import grader, profiles
from taskpack.rewards.grading import compare, grade

from .math_replies import MATH500, completions
from .test_hostile_replies import CPU_BOUND, FIXED, _cpu

# Where a profile differs from its reference's own code on purpose, by name; none does.
REFERENCE_BUGS: dict[str, set[int]] = {
    "math-dapo": set(),
    "math-reward": set(),
    "math-verify": set(),
}


@pytest.fixture(scope="module")
def math500(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MATH-500 as a task set: its LaTeX answers scored as math_match."""
    path = tmp_path_factory.mktemp("math") / "math500"
    options = {"id_column": "unique_id", "prompt_column": "problem", "answer_column": "answer",
               "reward": "math_match"}  # fmt: skip
    import_sources(path, {"test": [str(MATH500)]}, "kaggle", name="math500", options=options)
    return path


@pytest.mark.slow
@pytest.mark.conformance
def test_each_profile_scores_as_its_references_own_code(tmp_path: Path) -> None:
    """verl 0.9.1's math_dapo, math_reward and math_verify (with math-verify 0.9.0), run in
    their own venv on the same 6,045 completions, against the profiles that name them."""
    from .test_conformance import run_check

    rows = completions()
    pairs = [[r["completion"], r["answer"]] for r in rows]
    (tmp_path / "pairs.json").write_text(json.dumps(pairs))
    theirs = run_check("verl_math", "check_verl_math.py", str(tmp_path / "pairs.json"))
    for name, bugs in REFERENCE_BUGS.items():
        mine = [profiles.PROFILES[name].same(reply, gold) for reply, gold in pairs]
        differ = {i for i, (a, b) in enumerate(zip(mine, theirs[name], strict=True)) if a != b}
        assert differ == bugs, [(rows[i]["how"], pairs[i], mine[i]) for i in sorted(differ)[:5]]
        # a test that can fail: the profiles pass some and fail some of every reply form
        assert 0 < sum(mine) < len(mine)


@pytest.mark.parametrize(
    ("reply", "gold", "passed"),
    [
        # math_dapo compares a box verbatim, an Answer: line after Minerva's normalisation
        ("so \\boxed{\\frac12}", "\\frac{1}{2}", {"taskpack", "math-reward", "math-verify"}),
        ("Answer: 5 cm", "5", {"math-dapo", "math-verify"}),
        ("\\boxed{0.5}", "\\frac{1}{2}", {"taskpack", "math-reward", "math-verify"}),
        ("\\boxed{5\\text{ units}}", "5", {"taskpack", "math-reward", "math-verify"}),
        # Hendrycks' rule reads `\boxed ` up to the next dollar; an \fbox it finds scores 0
        ("$\\boxed 7$", "7", {"math-reward", "math-verify"}),
        ("\\fbox{7}", "7", {"taskpack"}),
        ("Final Answer: The final answer is $12$. I hope it is correct.", "12",
         {"taskpack", "math-dapo", "math-verify"}),
        ("\\boxed{13}", "12", set()),
    ],
)  # fmt: skip
def test_profiles_part_where_their_rules_do(reply: str, gold: str, passed: set[str]) -> None:
    got = {name for name, p in profiles.PROFILES.items() if p.same(reply, gold)}
    assert got == passed


def test_the_stdlib_profiles_score_hostile_replies_in_bounds() -> None:
    for reply in FIXED:
        for name in ("math-dapo", "math-reward"):
            rule = profiles.PROFILES[name].same
            same, cpu = _cpu(lambda r=rule, x=reply: float(r(x, "\\frac{1}{2}")))
            assert same == 0.0
            assert cpu <= CPU_BOUND * 5, (name, reply[:30], cpu)


def test_grade_scores_math_tasks_by_the_profile_named(math500: Path, tmp_path: Path) -> None:
    rows = [
        {"id": "test/algebra/2427.json", "completion": "Answer: 10 cm", "run": 1},
        {"id": "test/algebra/2584.json", "completion": "\\boxed{\\dfrac{14}{3}}", "run": 2},
    ]
    source = tmp_path / "c.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tasks = taskpack.open(math500).split("test")
    assert tasks[tasks.position("test/algebra/2427.json") or 0].answer == "10"
    statuses = {}
    for name in ("taskpack", "math-dapo", "math-reward"):
        out = tmp_path / f"{name}.jsonl"
        report = grade(math500, source, out, profile=name)
        assert sum(report.counts.values()) == 2
        statuses[name] = [json.loads(line)["status"] for line in out.read_text().splitlines()]
    assert statuses == {
        "taskpack": ["fail", "pass"],  # units stay in taskpack's own rule
        "math-dapo": ["pass", "fail"],  # Minerva drops "cm"; a box is compared verbatim
        "math-reward": ["fail", "pass"],  # no box: nothing read
    }
    failed = json.loads((tmp_path / "math-dapo.jsonl").read_text().splitlines()[1])
    assert (
        failed["reason"] == "not the answer by profile math-dapo"
        and failed["run"] == 2
        and failed["reward"] == 0.0
    )


def test_grade_names_an_unknown_profile_and_a_missing_package(
    math500: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "c.jsonl"
    source.write_text(json.dumps({"id": "test/algebra/2584.json", "completion": "4"}) + "\n")
    args = ["grade", str(math500), str(source), "-o", str(tmp_path / "o.jsonl")]
    result = CliRunner().invoke(main, [*args, "--profile", "minerva"])
    assert result.exit_code == 1
    assert "no math profile 'minerva'; profiles: taskpack, math-dapo, math-reward, math-verify" in (
        result.output
    )
    monkeypatch.setitem(sys.modules, "math_verify", None)
    monkeypatch.setattr(profiles, "_pool", profiles._pool.__wrapped__)
    result = CliRunner().invoke(main, [*args, "--profile", "math-verify"])
    assert result.exit_code == 1
    assert "pip install 'taskpack[math]'" in result.output
    result = CliRunner().invoke(main, ["grade", str(math500), str(source)])
    assert result.exit_code == 2 and "give -o/--output (or --compare)" in result.output


def test_compare_counts_where_the_profiles_part_by_class(math500: Path, tmp_path: Path) -> None:
    rows = [
        r
        for r in completions()
        if r["id"] in {"test/algebra/2584.json", "test/precalculus/807.json"}
    ]
    source = tmp_path / "c.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = compare(math500, source)
    assert found.profiles == list(profiles.PROFILES)
    assert set(found.classes) == {"fraction", "interval"}
    fraction = found.classes["fraction"]
    assert fraction["completions"] == sum(r["answer"] == "\\frac{14}{3}" for r in rows)
    assert 0 < fraction["split"] < fraction["completions"]
    # each count is the profile's own verdicts on those completions
    for name, p in profiles.PROFILES.items():
        want = sum(p.same(r["completion"], r["answer"]) for r in rows if "14" in r["answer"])
        assert fraction[name] == want
    result = CliRunner().invoke(main, ["grade", str(math500), str(source), "--compare", "-q"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["class", "completions", *profiles.PROFILES, "profiles", "part"]
    assert any(
        line.startswith("  test/algebra/2584.json: gold '\\\\frac{14}{3}'") for line in lines
    )


def test_minerva_closing_sentence_is_read_by_taskpacks_own_rule() -> None:
    said = "Final Answer: The final answer is $\\frac{14}{3}$. I hope it is correct."
    assert grader.extract_answer(said) == "$\\frac{14}{3}$"
    assert grader.answer_reply_score({"kind": "math_match", "answer": "\\frac{14}{3}"}, said) == 1
