"""SWE-bench tasks as the official harness runs them (`swebench` 4.1.0, the optional extra
`taskpack[swebench]`): the instance image it names, the eval script it builds from the instance
record (test patch, test directives per repository and version) and its grading.

Only the harness's eval part is used: its environment-setup part fetches requirement files
from GitHub for some repositories and cannot run offline.

Instances the harness has no spec for (SWE-Gym's repositories, a version newer than its table)
get an eval script of the same shape built here: the test files reset, the test patch applied,
and pytest run on the files it touches, when every FAIL_TO_PASS and PASS_TO_PASS name is a
pytest node id; graded by the harness's pytest log parser and resolution rule. Any other
instance has no eval script (`Unsupported`, which writers report per task).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from taskpack.converters._scripts import dockerfile, heredoc, quoted
from taskpack.model import Task
from taskpack.rewards import shipped

NAMESPACE = "swebench"  # the harness's images on Docker Hub: swebench/sweb.eval.x86_64.<id>
REPO_DIR = "/testbed"
_TEST = """#!/bin/bash
# taskpack verifier: run the SWE-bench harness's eval script for this instance, then grade
# with the harness's own parser (tests/grade_swebench.py) what the test runner reported
# (tests/swe_report/); the reward is the grader's alone.
T=${{TASKPACK_TESTS:-/tests}}
L=${{TASKPACK_LOGS:-/logs/verifier}}
export TASKPACK_LOGS="$L"
rm -f "$L/reward.txt" "$L/reward.json" "$L/test_report.jsonl"
mkdir -p "$L"
key=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')
{report}bash "$T/eval.sh" > "$L/test_output.txt" 2>&1
if ! TASKPACK_SWE_KEY="$key" python3 "$T/grade_swebench.py"; then
    rm -f "$L/reward.txt" "$L/reward.json"
    echo 0 > "$L/reward.txt"
fi
"""
_REPORT = """TASKPACK_SWE_REPORT="{runner}:$key:$L/test_report.jsonl" \\
PYTHONPATH="$T/swe_report${{PYTHONPATH:+:$PYTHONPATH}}" \\
    """
_SITECUSTOMIZE = b"import taskpack_swe_report\n\ntaskpack_swe_report.install()\n"


def available() -> bool:
    try:
        import swebench.harness.test_spec.create_scripts  # noqa: F401
    except ImportError:
        return False
    return True


def instance(task: Task) -> dict[str, Any]:
    """The SWE-bench instance record the task was read from."""
    from taskpack.converters._swe_rules import source_row

    return source_row(task)


def _lists(record: dict[str, Any], key: str) -> list[str]:
    value = record.get(key, "[]")
    return list(json.loads(value) if isinstance(value, str) else value)


class Unsupported(Exception):
    """Why an instance has no eval script here (the message is a loss line's)."""


@dataclass(frozen=True)
class Plan:
    """How one instance is verified: its image, eval script and grading."""

    image: str
    eval_script: str
    runner: str | None  # whose report `rewards/swe_report.py` reads; None: the printed log
    generic: bool  # graded by the harness's pytest parser, not the repository's own
    fail_to_pass: list[str]
    pass_to_pass: list[str]


def _known(record: dict[str, Any]) -> dict[str, Any] | None:
    from swebench.harness.constants import MAP_REPO_TO_EXT, MAP_REPO_VERSION_TO_SPECS

    if record["repo"] not in MAP_REPO_TO_EXT:
        return None
    specs: dict[str, Any] | None = MAP_REPO_VERSION_TO_SPECS.get(record["repo"], {}).get(
        str(record.get("version"))
    )
    return specs


def default_image(record: dict[str, Any]) -> str:
    """The image SWE-bench's naming gives an instance (`__` is `_1776_` on Docker Hub)."""
    tag = str(record["instance_id"]).replace("__", "_1776_")
    return f"{NAMESPACE}/sweb.eval.x86_64.{tag}:latest".lower()


def plan(task: Task) -> Plan:
    """The harness's own eval script for instances it knows; one of the same shape for others
    whose tests are pytest node ids; else `Unsupported`."""
    from swebench.harness.constants import MAP_REPO_TO_EXT
    from swebench.harness.test_spec.create_scripts import make_eval_script_list
    from swebench.harness.test_spec.test_spec import TestSpec

    record = instance(task)
    f2p, p2p = _lists(record, "FAIL_TO_PASS"), _lists(record, "PASS_TO_PASS")
    given = task.environment.image if task.environment else None
    specs = _known(record)
    if specs is not None:
        eval_script = make_eval_script_list(
            record, specs, "testbed", REPO_DIR, record["base_commit"], record["test_patch"]
        )
        spec = TestSpec(
            instance_id=record["instance_id"],
            repo=record["repo"],
            version=record["version"],
            repo_script_list=[],
            eval_script_list=eval_script,
            env_script_list=[],
            arch="x86_64",
            FAIL_TO_PASS=f2p,
            PASS_TO_PASS=p2p,
            language=MAP_REPO_TO_EXT[record["repo"]],
            docker_specs=specs.get("docker_specs", {}),
            namespace=NAMESPACE,
        )
        image = given or spec.instance_image_key
        return Plan(image, spec.eval_script, runner(record["repo"]), False, f2p, p2p)
    return Plan(
        given or default_image(record),
        _generic_eval_script(record, f2p + p2p),
        "pytest",
        True,
        f2p,
        p2p,
    )


_NODE_ID = re.compile(r"[^\s:]+\.py::\S.*")
_GENERIC = """#!/bin/bash
# taskpack: the SWE-bench harness has no spec for {repo} {version} (as JSON); this script has the
# shape of its eval scripts: reset the test files, apply the test patch, run pytest on them.
set -uxo pipefail
if [ -f /opt/miniconda3/bin/activate ]; then
    source /opt/miniconda3/bin/activate
    conda activate testbed
fi
cd {repo_dir}
git config --global --add safe.directory {repo_dir}
git status
git -c core.fileMode=false diff {commit}
{reset}
git apply -v - <<'{end}'
{test_patch}
{end}
: '{start_marker}'
pytest -rA {directives}
: '{end_marker}'
{reset}
"""


def _generic_eval_script(record: dict[str, Any], names: list[str]) -> str:
    from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT
    from swebench.harness.test_spec.python import get_test_directives
    from swebench.harness.utils import get_modified_files

    what = f"{record['repo']} {record.get('version')}"
    if not names or not all(_NODE_ID.fullmatch(n) for n in names):
        raise Unsupported(
            f"the SWE-bench eval script (the harness has no spec for {what}, and its tests "
            "are not pytest node ids to run)"
        )
    patch = record["test_patch"]
    changed = get_modified_files(patch)
    directives = get_test_directives(record)
    if not changed or not directives:
        raise Unsupported(f"the SWE-bench eval script ({what}: its test patch changes no tests)")
    end, _ = heredoc("TASKPACK_TEST_PATCH", patch)
    reset = f"git checkout {shlex.quote(record['base_commit'])} " + " ".join(
        shlex.quote(f) for f in changed
    )
    return _GENERIC.format(
        repo=quoted(record["repo"]),
        version=quoted(record.get("version")),
        repo_dir=REPO_DIR,
        commit=shlex.quote(record["base_commit"]),
        reset=reset,
        end=end,
        test_patch=patch.rstrip("\n"),
        start_marker=START_TEST_OUTPUT,
        end_marker=END_TEST_OUTPUT,
        directives=" ".join(shlex.quote(d) for d in directives),
    )


def runner(repo: str) -> str | None:
    """Which runner's report `rewards/swe_report.py` reads for `repo`; None for the harness's other
    languages, whose runners it does not hook and whose printed log is all there is."""
    from swebench.harness.log_parsers import MAP_REPO_TO_PARSER_PY

    parser = MAP_REPO_TO_PARSER_PY.get(repo)
    if parser is None:
        return None
    return {"parse_log_django": "django", "parse_log_sympy": "sympy"}.get(parser.__name__, "pytest")


def files(task: Task) -> dict[str, tuple[bytes, int]]:
    """Dockerfile, verifier and oracle of a SWE-bench task, as folder paths; `Unsupported`
    when the instance has no eval script here. Multi-SWE-bench's pull requests are verified
    by that benchmark's harness (`_multi_files`)."""
    from taskpack.converters._swe_rules import is_multi_swebench

    if is_multi_swebench(task.metadata):
        return _multi_files(task)
    record = instance(task)
    how = plan(task)
    graded: dict[str, Any] = {"FAIL_TO_PASS": how.fail_to_pass, "PASS_TO_PASS": how.pass_to_pass}
    graded.update({k: record[k] for k in ("instance_id", "repo", "version") if k in record})
    graded["runner"] = how.runner
    if how.generic:
        graded["parser"] = "pytest"
    out = {
        "environment/Dockerfile": (dockerfile(how.image, REPO_DIR), 0o644),
        "tests/test.sh": (
            _TEST.format(report=_REPORT.format(runner=how.runner) if how.runner else "").encode(),
            0o755,
        ),
        "tests/eval.sh": (how.eval_script.encode("utf-8"), 0o755),
        "tests/instance.json": ((json.dumps(graded, indent=2) + "\n").encode(), 0o644),
        "tests/grade_swebench.py": (shipped("swe"), 0o644),
    }
    if how.runner is not None:
        report = shipped("swe_report")
        out["tests/swe_report/taskpack_swe_report.py"] = (report, 0o644)
        out["tests/swe_report/sitecustomize.py"] = (_SITECUSTOMIZE, 0o644)
    if task.solution is not None:
        out["solution/solve.sh"] = (_gold(task.solution, REPO_DIR), 0o755)
    return out


def _gold(patch: str, repo_dir: str) -> bytes:
    """The oracle: the gold patch applied in the repository."""
    end, body = heredoc("TASKPACK_GOLD_PATCH", patch)
    head = f"#!/bin/bash\n# Apply the gold patch.\ncd {shlex.quote(repo_dir)} && "
    return f"{head}git apply -v - <<'{end}'\n".encode() + body + f"{end}\n".encode()


def image(task: Task) -> str:
    """The image an instance runs in: the task's own, else the harness's naming."""
    if task.environment is not None and task.environment.image:
        return task.environment.image
    return plan(task).image


_MULTI_TEST = """#!/bin/bash
# taskpack verifier: apply the test patch to the agent's work and run the tests as the
# Multi-SWE-bench image does (/home/test-run.sh), then grade the log with that benchmark's own
# parser for this repository and its report rules (tests/grade_multi_swebench.py); the reward
# is the grader's alone.
T=${{TASKPACK_TESTS:-/tests}}
L=${{TASKPACK_LOGS:-/logs/verifier}}
export TASKPACK_LOGS="$L"
rm -f "$L/reward.txt" "$L/reward.json"
mkdir -p "$L"
cat > /home/test.patch <<'{end}'
{test_patch}
{end}
bash /home/test-run.sh > "$L/test_output.txt" 2>&1
if ! python3 "$T/grade_multi_swebench.py"; then
    rm -f "$L/reward.txt" "$L/reward.json"
    echo 0 > "$L/reward.txt"
fi
"""
# What the grader reads of a Multi-SWE-bench row: the pull request, the dataset's transitions
# and the recorded results of the runs before the fix.
_MULTI_KEYS = (
    *("org", "repo", "number", "tag", "number_interval", "run_result", "test_patch_result"),
    *("p2p_tests", "f2p_tests", "s2p_tests", "n2p_tests"),
)


def _multi_files(task: Task) -> dict[str, tuple[bytes, int]]:
    from taskpack.converters._swe_rules import TEST_PATCH

    reward = task.reward
    assert reward is not None and reward.kind == "swe_tests"
    patch = task.file(reward.test_patch or TEST_PATCH).read_bytes().decode("utf-8")
    graded = {k: task.metadata[k] for k in _MULTI_KEYS if k in task.metadata}
    workdir = (task.environment.workdir if task.environment else None) or REPO_DIR
    end, _ = heredoc("TASKPACK_TEST_PATCH", patch)
    test = _MULTI_TEST.format(end=end, test_patch=patch.rstrip("\n"))
    out = {
        "environment/Dockerfile": (dockerfile(image(task), workdir), 0o644),
        "tests/test.sh": (test.encode("utf-8"), 0o755),
        "tests/instance.json": ((json.dumps(graded, indent=2) + "\n").encode(), 0o644),
        "tests/grade_multi_swebench.py": (
            shipped("multi_swe"),
            0o644,
        ),
    }
    if task.solution is not None:
        out["solution/solve.sh"] = (_gold(task.solution, workdir), 0o755)
    return out


_INLINE = """#!/bin/bash
# taskpack: this SWE-bench instance's verifier (the tests/ folder of its folder export, packed
# below), run after the agent's patch: exits 0 only when the tests the runner reported, graded
# by the harness's parser, resolve the instance (every FAIL_TO_PASS and PASS_TO_PASS passes).
d=$(mktemp -d)
base64 -d <<'TASKPACK_TESTS' | tar -xz -C "$d"
{packed}
TASKPACK_TESTS
TASKPACK_TESTS="$d/tests" TASKPACK_LOGS="$d/logs" bash "$d/tests/test.sh"
test "$(cat "$d/logs/reward.txt" 2>/dev/null)" = 1
"""


def inline_eval_script(task: Task) -> str:
    """The verifier as one script whose exit status is the verdict, for frameworks that run an
    instance's `eval_script` and read its status (SkyRL's mini-swe-agent)."""
    import base64
    import gzip
    import io
    import tarfile

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for rel, (data, mode) in sorted(files(task).items()):
            if rel.startswith("tests/"):
                info = tarfile.TarInfo(rel)
                info.size, info.mode = len(data), mode
                tar.addfile(info, io.BytesIO(data))
    packed = base64.b64encode(gzip.compress(raw.getvalue(), mtime=0)).decode("ascii")
    lines = "\n".join(packed[i : i + 76] for i in range(0, len(packed), 76))
    return _INLINE.format(packed=lines)
