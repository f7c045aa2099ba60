"""What a folder export (Harbor, OpenReward) gives a task from elsewhere so that it runs: a
verifier in `tests/` that writes /logs/verifier/reward.txt, an oracle `solution/solve.sh`, and
the line of the instruction that says where the agent's work goes.

Answers (exact, numeric, multiple choice) and Python unit tests are graded by `rewards/grader.py`
(standard library only) against `tests/expected.json`; the oracle writes the reference answer
to /app/answer.txt or the reference code to /app/solution.py. A test command runs as it is and
scores its exit code. What no script here can check (rubrics, judges) is a reported loss.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from taskpack import records
from taskpack.converters import _swe_harness as swe_harness
from taskpack.converters._folders import Files
from taskpack.converters._format import Target
from taskpack.converters._scripts import dockerfile, heredoc
from taskpack.errors import TaskpackError
from taskpack.model import (
    Task,
)
from taskpack.rewards import shipped

ANSWER_FILE = "/app/answer.txt"
CODE_FILE = "/app/solution.py"
REWARD_FILES = "/logs/verifier/reward.txt /logs/verifier/reward.json"
# The first lines of every test.sh taskpack generates; a script that has them is not wrapped
# again when a task goes from one folder format to another.
WRAPPED = "# taskpack verifier:"
# A task's own test script, kept byte for byte below these lines and run in a shell of its own
# (`set -e` or `exit` there ends only that shell); the reward it writes is kept as it is, and
# one that writes none is scored by its exit status, as Harbor's Terminal-Bench mapper does.
# Stale rewards go first, so none written before the verifier ran is ever read.
_OWN_TEST = """#!/bin/bash
{marker} the task's own test script (below, unchanged) runs in a shell of its own; the
# reward it writes is kept, and a script that writes none scores 1 if it exits 0, else 0.
rm -f {rewards}
mkdir -p /logs/verifier
_taskpack_script=$(mktemp)
cat > "$_taskpack_script" <<'{end}'
{script}{end}
bash -c 'script=$1; shift; . "$script"' "$0" "$_taskpack_script" "$@"
_taskpack_status=$?
rm -f "$_taskpack_script"
if [ ! -e /logs/verifier/reward.txt ] && [ ! -e /logs/verifier/reward.json ]; then
    if [ $_taskpack_status -eq 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
fi
exit $_taskpack_status
"""
# grade.py writes the reward last; if it did not finish (it crashed, or the code under test
# killed it), any reward file there is not its, and the score is 0. Its exit status 3 alone
# (the code under test, another user, cannot give it that) means no reward can be stood
# behind (the machine was too slow to judge; it printed why): no reward file, as Harbor reads
# an error.
_GRADE_TEST = f"""#!/bin/bash
{WRAPPED} grade /app against the reference in /tests/expected.json (tests/grade.py,
# standard library only); the reward is grade.py's alone.
rm -f {REWARD_FILES}
mkdir -p /logs/verifier
python3 /tests/grade.py
_taskpack_status=$?
if [ $_taskpack_status -eq 3 ]; then
    rm -f {REWARD_FILES}
    exit 3
elif [ $_taskpack_status -ne 0 ]; then
    rm -f {REWARD_FILES}
    echo 0 > /logs/verifier/reward.txt
fi
"""
_COMMAND_TEST = """#!/bin/bash
# Run the task's own check; its exit code is the reward.
export TEST_DIR=${{TEST_DIR:-/tests}}
cd /app && {command}
"""


def graded(task: Task) -> bool:
    """Whether `rewards/grader.py` checks this task's reward."""
    reward = task.reward
    if isinstance(reward, records.CODE_KINDS):
        return reward.language == "python"
    if (
        isinstance(
            reward,
            (records.ExactMatch, records.NumericMatch, records.MathMatch, records.MultipleChoice),
        )
        or reward is None
    ):
        return task.answer is not None
    return False


def answer_spec(task: Task) -> dict[str, Any]:
    """What `grader.answer_score` compares an answer with, for a graded task of an answer
    kind: the reference and its rule, plain data (a grader in another process takes it)."""
    if not graded(task) or isinstance(task.reward, records.CODE_KINDS):
        raise TaskpackError(f"task {task.id!r}: its reward is not an answer compared as text")
    return expected(task, "reward")


def reply_fields(task: Task) -> dict[str, Any] | None:
    """What `grader.reply_score` needs to score a reply to `task` in a trainer's own reward
    hook (the reward spec, the reference answer, a unit-test task's tests and prompt); None
    for a task taskpack's grader does not score."""
    reward = task.reward
    if reward is None or not graded(task):
        return None
    fields: dict[str, Any] = {"reward": reward.model_dump(mode="json"), "answer": task.answer}
    if isinstance(reward, records.CODE_KINDS):
        fields["tests"] = task.file(reward.test_file).read_bytes().decode("utf-8", "replace")
        fields["prompt"] = task.instruction
    return fields


def answer_reward(task: Task, reply: str) -> float:
    """The reward of `reply` to a graded task of an answer kind, as its exported grader gives
    it (`grader.answer_reply_score`: its answer read by the field's rule, then compared): the
    text is compared, never run, so it is scored in process."""
    from taskpack.rewards.grader import answer_reply_score

    return answer_reply_score(answer_spec(task), reply)


def instruction_suffix(task: Task) -> str:
    """Where the agent's work goes, for graded tasks; empty otherwise."""
    reward = task.reward
    if isinstance(reward, records.SweTests):
        workdir = task.environment.workdir if task.environment else None
        return f"\n\nThe repository is checked out at {workdir or swe_harness.REPO_DIR}."
    if not graded(task):
        return ""
    if isinstance(reward, records.UnitTests):
        return (
            f"\n\nWrite your code to {CODE_FILE}: a Python module that defines "
            f"`{reward.entry_point}`."
        )
    if isinstance(reward, records.IoTests):
        does = f"defines `{reward.call}`" if reward.call else "reads standard input"
        return f"\n\nWrite your program to {CODE_FILE}: a Python program that {does}."
    if isinstance(reward, records.MultipleChoice):
        return f"\n\nWrite the letter of your answer to {ANSWER_FILE}."
    return f"\n\nWrite your final answer to {ANSWER_FILE}."


def expected(task: Task, test_name: str) -> dict[str, Any]:
    reward = task.reward
    if isinstance(reward, records.UnitTests):
        return {
            "kind": "unit_tests",
            "test_file": reward.test_file,
            "entry_point": reward.entry_point,
            "test": test_name,
        }
    if isinstance(reward, records.IoTests):
        return {**reward.model_dump(mode="json", exclude={"language"}), "test": test_name}
    spec: dict[str, Any] = {
        "kind": reward.kind if reward is not None else "exact_match",
        "answer": task.answer,
        "test": test_name,
    }
    if isinstance(reward, records.NumericMatch):
        spec["tolerance"] = reward.tolerance
    elif isinstance(reward, records.ExactMatch):
        spec.update(strip=reward.strip, case_sensitive=reward.case_sensitive)
    elif isinstance(reward, records.MultipleChoice):
        spec["labels"] = [c.label for c in reward.choices]
    return spec


def tests_files(task: Task, test_name: str, target: Target) -> dict[str, tuple[bytes, int]]:
    """The verifier files (name in tests/ -> bytes, mode) for a task from elsewhere."""
    reward = task.reward
    if graded(task):
        grader = shipped("grader")
        # one line: json's C encoder (an indented dump is its Python one, 3x slower)
        spec = json.dumps(expected(task, test_name), ensure_ascii=False) + "\n"
        return {
            "test.sh": (_GRADE_TEST.encode(), 0o755),
            "grade.py": (grader, 0o644),
            "expected.json": (spec.encode("utf-8"), 0o644),
        }
    if isinstance(reward, records.TestCommand):
        return {"test.sh": (with_exit_reward(_COMMAND_TEST.format(command=reward.command)), 0o755)}
    target.losses.lost("reward (no check a folder export can run)", task)
    return {"test.sh": (with_exit_reward(_COMMAND_TEST.format(command="false")), 0o755)}


def is_wrapped(script: bytes) -> bool:
    """Whether `script` is a test.sh taskpack wrote (its second line says so)."""
    lines = script.split(b"\n", 2)
    return len(lines) > 1 and lines[1].startswith(WRAPPED.encode())


def with_exit_reward(script: str | bytes) -> bytes:
    """A task's own test script, wrapped so that it always leaves a reward (see `_OWN_TEST`);
    one taskpack already wrapped is returned as it is."""
    data = script.encode("utf-8") if isinstance(script, str) else script
    if is_wrapped(data):
        return data
    end, data = heredoc("TASKPACK_OWN_TEST", data)
    head, tail = _OWN_TEST.split("{script}")
    fill = {"marker": WRAPPED, "rewards": REWARD_FILES, "end": end}
    return head.format(**fill).encode() + data + tail.format(**fill).encode()


def solve_reference(task: Task) -> str | None:
    """What a correct agent hands in for a graded task: the answer, or the whole code (a
    HumanEval solution is a body completing the prompt's stub, so the stub comes first)."""
    if not graded(task):
        return None
    if isinstance(task.reward, records.IoTests):
        return task.solution
    if isinstance(task.reward, records.UnitTests):
        if task.solution is None:
            return None
        code = task.solution
        return code if f"def {task.reward.entry_point}" in code else task.instruction + code
    return task.answer if isinstance(task.answer, str) else json.dumps(task.answer)


def solve_script(task: Task) -> bytes | None:
    """The oracle for a task from elsewhere: the reference, put where the instruction says."""
    reference = solve_reference(task)
    if reference is not None:
        path = CODE_FILE if isinstance(task.reward, records.CODE_KINDS) else ANSWER_FILE
        return _write_file(path, reference.encode("utf-8"))
    if task.solution is None or isinstance(task.reward, records.SweTests):
        return None  # a gold patch is applied by the SWE-bench harness files' own solve.sh
    if task.solution.startswith("#!"):
        return task.solution.encode("utf-8")
    return _write_file(ANSWER_FILE, task.solution.encode("utf-8"))


def _write_file(path: str, data: bytes) -> bytes:
    encoded = base64.b64encode(data).decode("ascii")
    lines = [encoded[i : i + 76] for i in range(0, len(encoded), 76)]
    body = "\n".join(lines)
    return (
        f"#!/bin/bash\n# Write the reference to {path}.\nbase64 -d > {path} <<'EOF'\n{body}\nEOF\n"
    ).encode()


DEFAULT_IMAGE = "python:3.12-slim"


def run_image(task: Task) -> str | None:
    """The image a task runs in: its own, else, for a task taskpack's own verifier grades
    (which needs only a Python 3), `DEFAULT_IMAGE`."""
    image = task.environment.image if task.environment else None
    return image or (DEFAULT_IMAGE if graded(task) else None)


def complete(
    task: Task,
    files: Files,
    target: Target,
    test_name: str,
    *,
    copy_workspace: bool,
    declare_image: bool = False,
) -> str | None:
    """Add what a task from elsewhere needs to run to its folder's `files` (path -> bytes,
    mode): a Dockerfile (its image; with `copy_workspace`, its workspace files copied to /app
    from `environment/workspace/`), `tests/test.sh` writing the reward, `solution/solve.sh`.
    The task's own files win; a clash is an error, never an overwrite. With `declare_image`
    (a format whose config names an image), a Dockerfile that would only name the image and
    /app is not written: the image is returned, for the config to declare with /app as the
    working folder (frameworks that build no Dockerfile, Verifiers', then run the task)."""
    if isinstance(task.reward, records.SweTests):
        if swe_harness.available():
            try:
                made = swe_harness.files(task)
            except swe_harness.Unsupported as e:
                target.losses.lost(str(e), task)
                return None
            for rel, (data, mode) in made.items():
                if not (rel == "environment/Dockerfile" and rel in files):
                    _add(files, rel, data, mode, task)
            return None
        target.losses.lost(
            "the SWE-bench harness's eval script and grading (pip install 'taskpack[swebench]')",
            task,
        )
    image = run_image(task)
    declared = None
    copied = copy_workspace and bool(task.files_of("workspace"))
    if "environment/Dockerfile" not in files and image is None:
        target.losses.lost("environment (neither a Dockerfile nor an image to run in)", task)
    elif "environment/Dockerfile" not in files and declare_image and not copied:
        declared = image
    elif "environment/Dockerfile" not in files and image is not None:
        files["environment/Dockerfile"] = (dockerfile(image, "/app", copied), 0o644)
    else:
        if copy_workspace and task.files_of("workspace"):
            target.losses.lost(
                "workspace files (the task's own Dockerfile does not copy them)", task
            )
        missing = _missing_sources(files)
        if missing:
            what = ", ".join(missing)
            target.losses.lost(f"Dockerfile COPY sources outside the build context ({what})", task)
    own_test = files.get("tests/test.sh")
    if own_test is not None:  # a script that signals by its exit code (Terminal-Bench)
        files["tests/test.sh"] = (with_exit_reward(own_test[0]), own_test[1] | 0o111)
    else:
        for name, (data, mode) in tests_files(task, test_name, target).items():
            _add(files, f"tests/{name}", data, mode, task)
        _report_made(task, target)
    if not task.files_of("solution"):
        script = solve_script(task)
        if script is not None:
            _add(files, "solution/solve.sh", script, 0o755, task)
    return declared


def _report_made(task: Task, target: Target) -> None:
    """What a folder keeps only as the verifier and oracle made here: read back, the task
    has a `test_command` reward and those files, not its own fields."""
    if task.reward is not None and not isinstance(task.reward, records.TestCommand):
        target.losses.lost(f"reward {task.reward.kind} (read back: tests/test.sh's command)", task)
    if task.answer is not None and graded(task):
        target.losses.lost("answer (read back: inside tests/expected.json only)", task)
    if task.solution is not None and not task.files_of("solution"):
        target.losses.lost("solution (read back: as solution/solve.sh)", task)
    if instruction_suffix(task):
        target.losses.changed("prompt: a line saying where the work goes is added", task)


def _missing_sources(files: Files) -> list[str]:
    """What the Dockerfile copies that the build context lacks: in a task from elsewhere, its
    tests or solution, which taskpack never puts where the agent can read them."""
    import shlex

    context = {rel.removeprefix("environment/") for rel in files if rel.startswith("environment/")}
    text = files["environment/Dockerfile"][0].decode("utf-8", "replace")
    missing = []
    for line in text.replace("\\\n", " ").splitlines():
        words = line.strip().split(None, 1)
        if len(words) == 2 and words[0].upper() in ("COPY", "ADD"):
            try:
                args = [a for a in shlex.split(words[1]) if not a.startswith("--")]
            except ValueError:
                continue
            for src in args[:-1]:
                src = src.removeprefix("./").rstrip("/")
                if src not in ("", ".") and not any(
                    c == src or c.startswith(src + "/") for c in context
                ):
                    missing.append(src)
    return sorted(set(missing))


def _add(files: Files, rel: str, data: bytes, mode: int, task: Task) -> None:
    if rel in files:
        raise TaskpackError(f"task {task.id!r}: its file {rel} clashes with one taskpack writes")
    files[rel] = (data, mode)
