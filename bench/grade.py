"""Grading speed, in completions a second on 2 cores, in one run, on the same completions:
`taskpack grade` (each completion in a bubblewrap sandbox of its own, two at a time), the
graders taskpack's exports ship as trainers call them (`grader.reply_score`: the code under
test in a child process, no sandbox; two processes), EvalPlus 0.3.1's `untrusted_check` (with
its `sanitize`, two at a time, as `evalplus.evaluate --parallel 2`) and verl 0.9.1's
`prime_code` (a process pool of two), each in its own venv; then math answers by each profile.

    python bench/grade.py --tasks 60

Code completions: the HumanEval tasks whose tests are all `assert candidate(ARGS) == VALUE`
(so EvalPlus and prime_code get the very same inputs and outputs), each answered four ways:
the reference in a fence, a wrong function, and that function behind a program that exits 0
before any test runs or prints a pass marker and exits. Every grader should pass the references
and nothing else (printed). Math: MATH-500's 6,045 completions of tests/math_replies.py, by
taskpack's rule and the verl profiles in process, and Math-Verify as verl calls it, in its
own venv; one core each. Timed inside the process doing the work, interpreter start excluded.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import ROOT, machine  # noqa: E402

sys.path.insert(0, str(ROOT))
import taskpack  # noqa: E402
from taskpack.converters import reply_fields  # noqa: E402
from taskpack.importer import import_sources  # noqa: E402
from taskpack.rewards.grader import reply_score  # noqa: E402
from taskpack.rewards.profiles import PROFILES  # noqa: E402
from tests.conformance.frameworks import ensure  # noqa: E402
from tests.conftest import DATA  # noqa: E402

FORMS = ("reference", "wrong", "exits 0", "pass marker")


def calls(tests: str) -> list[tuple[list[Any], Any]] | None:
    """The (arguments, value) of every `assert candidate(ARGS) == VALUE` in `check`, or None
    when it holds any other statement that tests something."""
    check = next(
        n for n in ast.parse(tests).body if isinstance(n, ast.FunctionDef) and n.name == "check"
    )
    found = []
    for node in check.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare):
            return None
        test = node.test
        call = test.left
        if not (
            len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "candidate"
            and not call.keywords
        ):
            return None
        try:
            args = [ast.literal_eval(a) for a in call.args]
            value = ast.literal_eval(test.comparators[0])
            json.dumps([args, value])
        except (ValueError, TypeError, SyntaxError):
            return None
        if isinstance(value, float) or any(isinstance(a, float) for a in args):
            return None  # compared exactly by some graders, within atol by others
        found.append((args, value))
    return found or None


def code_jobs(folder: Path, limit: int) -> list[dict[str, Any]]:
    import_sources(
        folder, {"test": [str(DATA / "humaneval" / "HumanEval.jsonl.gz")]}, "humaneval", name="he"
    )
    jobs = []
    for task in taskpack.open(folder).split("test"):
        fields = reply_fields(task)
        assert fields is not None
        found = calls(fields["tests"])
        if found is None:
            continue
        entry = task.reward.entry_point  # type: ignore[union-attr]
        whole = task.instruction + str(task.solution)
        wrong = f"def {entry}(*args):\n    return None\n"
        replies = {
            "reference": f"```python\n{whole}```",
            "wrong": f"```python\n{wrong}```",
            "exits 0": f"```python\nimport os\nos._exit(0)\n{wrong}```",
            "pass marker": f"```python\nprint('All tests passed')\nraise SystemExit(0)\n{wrong}```",
        }
        for form, reply in replies.items():
            jobs.append({"id": task.id, "form": form, "completion": reply, "entry_point": entry,
                         "inputs": [a for a, _ in found], "outputs": [v for _, v in found],
                         "fields": fields})  # fmt: skip
        if len(jobs) >= 4 * limit:
            break
    return jobs


def _hook(job: dict[str, Any]) -> bool:
    f = job["fields"]
    return reply_score(f["reward"], f["answer"], job["completion"], f["tests"], f["prompt"]) == 1


def run_taskpack(
    folder: Path, jobs: list[dict[str, Any]], scratch: Path
) -> tuple[float, list[bool]]:
    source, out = scratch / "completions.jsonl", scratch / "graded.jsonl"
    source.write_text("".join(json.dumps({"id": j["id"], "completion": j["completion"]}) + "\n"
                              for j in jobs))  # fmt: skip
    out.unlink(missing_ok=True)
    start = time.perf_counter()
    taskpack.grade(folder, source, out, jobs=2)
    seconds = time.perf_counter() - start
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return seconds, [r["status"] == "pass" for r in rows]


def run_hook(jobs: list[dict[str, Any]]) -> tuple[float, list[bool]]:
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(int, range(2)))  # the workers started before the clock
        start = time.perf_counter()
        passed = list(pool.map(_hook, jobs))
    return time.perf_counter() - start, passed


def run_peer(
    venv: str, script: str, jobs: list[dict[str, Any]], scratch: Path
) -> tuple[float, list[bool]]:
    path = scratch / f"{venv}.json"
    path.write_text(json.dumps([{k: v for k, v in j.items() if k != "fields"} for j in jobs]))
    proc = subprocess.run([str(ensure(venv)), str(HERE / "peers" / script), str(path)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    return found["seconds"], found["passed"]


def math_rates(scratch: Path) -> dict[str, float]:
    from tests.math_replies import completions

    pairs = [(r["completion"], r["answer"]) for r in completions()]
    rates = {}
    for name in ("taskpack", "math-dapo", "math-reward"):
        same = PROFILES[name].same
        start = time.perf_counter()
        for reply, gold in pairs:
            same(reply, gold)
        rates[name] = len(pairs) / (time.perf_counter() - start)
    path = scratch / "pairs.json"
    path.write_text(json.dumps(pairs))
    script = (
        "import json, sys, time\n"
        "from math_verify.grader import verify\n"
        "from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig, parse\n"
        "pairs = json.load(open(sys.argv[1]))\nstart = time.perf_counter()\n"
        "for reply, gold in pairs:\n"
        "    g = parse('\\\\boxed{' + gold + '}', (LatexExtractionConfig(),))\n"
        "    p = parse(reply, (ExprExtractionConfig(), LatexExtractionConfig()))\n"
        "    g and p and any(verify(a, b) for a in g for b in p)\n"
        "print(len(pairs) / (time.perf_counter() - start))\n"
    )
    proc = subprocess.run([str(ensure("verl_math")), "-c", script, str(path)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    rates["Math-Verify (its own venv)"] = float(proc.stdout.strip().splitlines()[-1])
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=60, help="HumanEval tasks (4 replies each)")
    parser.add_argument("--no-math", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        jobs = code_jobs(scratch / "he", args.tasks)
        results = {
            "taskpack grade (sandboxed)": run_taskpack(scratch / "he", jobs, scratch),
            "taskpack's shipped grader": run_hook(jobs),
            "EvalPlus untrusted_check": run_peer("evalplus", "evalplus_check.py", jobs, scratch),
            "verl prime_code": run_peer("verl", "prime_code_check.py", jobs, scratch),
        }
        tasks = len(jobs) // len(FORMS)
        print(f"grade {len(jobs)} HumanEval completions ({tasks} tasks x {', '.join(FORMS)}), "
              f"2 workers, {machine()}:")  # fmt: skip
        base = len(jobs) / results["taskpack grade (sandboxed)"][0]
        for name, (seconds, passed) in results.items():
            rate = len(jobs) / seconds
            by = {form: sum(p for p, j in zip(passed, jobs, strict=True) if j["form"] == form)
                  for form in FORMS}  # fmt: skip
            said = ", ".join(f"{form} {n}" for form, n in by.items())
            print(f"  {name:<28}{rate:8.1f} completions/s   this / taskpack grade = "
                  f"{rate / base:5.2f}   passed: {said}")  # fmt: skip
        if not args.no_math:
            rates = math_rates(scratch)
            print("math: 6,045 MATH-500 completions, one core each:")
            for name, rate in rates.items():
                print(f"  {name:<28}{rate:10.0f} completions/s")


if __name__ == "__main__":
    main()
