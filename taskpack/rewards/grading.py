"""`taskpack grade`: completions a policy wrote, each scored by its task's own verifier, as
`check`, ORS sessions and every exported grader score them.

COMPLETIONS is JSON Lines, `{"id", "completion"}` a line (`"split"` where an id is in more than
one split; any other key is carried through). Each output line is the input line with
`reward` (a float, or null), `status` and `reason` added:

- `pass`: the verifier gave full reward; `fail`: it gave less;
- `error`: nothing scored it (the sandbox could not start, the verifier ran out of time or
  wrote no reward, a reward kind nothing here scores). An error is never a 0: `annotate`
  leaves it out of pass rates and counts it.

A completion is read as the field reads a model's reply (`grader.extract_code`, the
answer rule of `grader`): reasoning dropped, the last fenced block defining the entry point,
the last `\\boxed{}` or `Answer:` line. Answer kinds are scored in process; Python unit tests
in the sandbox `check` uses. Lines are graded `jobs` at a time and written in their order as
they come, so an output that exists is continued where it stopped, never redone.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from taskpack import records
from taskpack.base.nesting import parse_json
from taskpack.errors import TaskpackError, unknown
from taskpack.model import Task
from taskpack.rewards.profiles import (
    MATH_KINDS,
    PROFILES,
    Profile,
    Unavailable,
    answer_class,
    start,
)
from taskpack.storage.taskset import TaskSet

STATUSES = ("pass", "fail", "error")
K = TypeVar("K")
R = TypeVar("R")


@dataclass(frozen=True)
class Outcome:
    reward: float | None  # None: not scored (an error)
    status: str
    reason: str = ""


@dataclass
class Graded:
    """What a `grade` run did: counts by status (this run's lines), lines already graded by
    an earlier run, the output, the seconds it took."""

    out: Path
    counts: Counter[str] = field(default_factory=Counter)
    resumed: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        done = sum(self.counts.values())
        rate = done / self.seconds if self.seconds > 0 else 0.0
        by = ", ".join(f"{self.counts[s]} {s}" for s in STATUSES)
        again = f" (continued after {self.resumed} graded before)" if self.resumed else ""
        return f"graded {done} completions{again}: {by}; {rate:.1f} completions/s -> {self.out}"


def score(
    task: Task, completion: str, timeout: float = 120.0, profile: Profile | None = None
) -> Outcome:
    """One completion against `task`'s own verifier (see the module's doc), or for a math
    task, against `profile`'s rule where one is given."""
    from taskpack.converters import answer_reward
    from taskpack.rewards.sandbox import SandboxError
    from taskpack.rewards.trials import Bounds, NotRunnable, Refused, code_reward, unscorable
    from taskpack.rewards.trials import score as reward_of

    why = unscorable(task)
    if why is not None:
        return Outcome(None, "error", f"not scored here: {why}")
    if profile is not None and task.reward is not None and task.reward.kind in MATH_KINDS:
        same = profile.same(completion, gold(task))
        why = "" if same else f"not the answer by profile {profile.name}"
        return Outcome(float(same), "pass" if same else "fail", why)
    if not isinstance(task.reward, records.CODE_KINDS):
        reward = answer_reward(task, completion)
        return Outcome(reward, "pass" if reward >= 1.0 else "fail")
    try:
        found = code_reward(task, completion, Bounds(timeout=timeout))
    except SandboxError as e:
        return Outcome(None, "error", f"the sandbox cannot start: {e}")
    except (Refused, NotRunnable) as e:
        return Outcome(None, "error", str(e))
    if found is None:
        return Outcome(None, "error", "the verifier wrote no reward")
    reward = reward_of(found)
    return Outcome(
        reward, "pass" if reward >= 1.0 else "fail", "" if reward >= 1.0 else "tests failed"
    )


def grade(
    target: str | os.PathLike[str] | TaskSet,
    completions: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    split: str | None = None,
    jobs: int | None = None,
    timeout: float = 120.0,
    registry: Any = None,
    quiet: bool = True,
    profile: str = "taskpack",
) -> Graded:
    """Grade every line of `completions` against the tasks of `target` (a folder or
    NAME@VERSION) into `out` (see the module's doc); `split` is the split of lines that name
    none; `timeout`: seconds a verifier may run; `profile`: the rule math tasks are scored by
    (`profiles.PROFILES`; the default is the task's own verifier). Returns the counts; a line
    that names no task, or has no completion, stops the run with one line naming it (what was
    graded before it is kept, and a run again continues there)."""
    from taskpack.base.progress import counted
    from taskpack.curation.steps import open_target

    rule = None if profile == "taskpack" else _profile(profile)
    ts = open_target(target, registry)
    source, out = Path(completions), Path(out)
    done = _resume(out)
    total = sum(1 for _ in _lines(source))
    report = Graded(out, resumed=done)
    started = time.monotonic()
    with out.open("a", encoding="utf-8") as sink:

        def work() -> Iterator[tuple[dict[str, Any], Callable[[], Outcome]]]:
            for k, (n, text) in enumerate(counted(_lines(source), "graded", total, quiet), 1):
                if k > done:
                    row, task = _task(ts, text, f"{source}:{n}", split)
                    yield row, partial(score, task, row["completion"], timeout, rule)

        def write(row: dict[str, Any], outcome: Outcome) -> None:
            row.update(reward=outcome.reward, status=outcome.status, reason=outcome.reason)
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
            sink.flush()
            report.counts[outcome.status] += 1

        _in_order(jobs, work(), write)
    report.seconds = time.monotonic() - started
    return report


def _in_order(
    jobs: int | None, work: Iterable[tuple[K, Callable[[], R]]], done: Callable[[K, R], None]
) -> None:
    """Each piece of `work` run on `jobs` threads (default: one per CPU), its result handed to
    `done` in the order the work came, at most four a thread ahead. Where the work stops on an
    error (a bad line), what was submitted before it is handed on first."""
    width = max(1, jobs or os.cpu_count() or 1)
    pending: deque[tuple[K, Future[R]]] = deque()

    def drain(keep: int) -> None:
        while len(pending) > keep:
            key, future = pending.popleft()
            done(key, future.result())

    with ThreadPoolExecutor(width) as pool:
        try:
            for key, job in work:
                pending.append((key, pool.submit(job)))
                drain(4 * width)
        finally:
            drain(0)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line that is not blank."""
    with path.open(encoding="utf-8", errors="surrogateescape") as f:
        for n, text in enumerate(f, 1):
            if text.strip():
                yield n, text


def _resume(out: Path) -> int:
    """How many lines an earlier run graded into `out` (one per input line, in order); a
    line it was cut in the middle of is dropped, to be graded again."""
    if not out.exists():
        return 0
    data = out.read_bytes()
    whole = data[: data.rfind(b"\n") + 1]
    if len(whole) != len(data):
        with out.open("r+b") as f:
            f.truncate(len(whole))
    return whole.count(b"\n")


def _task(ts: TaskSet, text: str, where: str, split: str | None) -> tuple[dict[str, Any], Any]:
    """A completions line, checked: the row (with its line number) and the task it names."""
    try:
        row = parse_json(text)
    except ValueError as e:
        raise TaskpackError(f"{where}: {e}") from None
    if not isinstance(row, dict):
        raise TaskpackError(f"{where}: expected an object with `id` and `completion`")
    if not isinstance(row.get("completion"), str):
        have = ", ".join(sorted(map(str, row))) or "none"
        raise TaskpackError(f"{where}: no `completion` text (its fields: {have})")
    task_id, named = row.get("id"), row.get("split", split)
    if not isinstance(task_id, (str, int)) or isinstance(task_id, bool):
        raise TaskpackError(f"{where}: no task `id`")
    task_id = str(task_id)
    candidates = [named] if named is not None else ts.splits
    if named is not None and named not in ts.splits:
        raise unknown("split", str(named), ts.splits, where)
    found = [(s, ts.split(s)) for s in candidates if ts.split(s).position(task_id) is not None]
    if not found:
        ids = [i for s in candidates for i in ts.split(s).ids()]
        raise unknown("task", task_id, ids, f"{where}: {ts.manifest.ref}")
    if len(found) > 1:
        raise TaskpackError(
            f"{where}: task {task_id!r} is in splits {', '.join(s for s, _ in found)}: "
            "give `split` on the line, or --split"
        )
    tasks = found[0][1]
    return row, tasks[tasks.position(task_id) or 0]


def gold(task: Task) -> str:
    """A math task's reference answer, as the profiles compare it."""
    from taskpack.converters import answer_spec

    return str(answer_spec(task)["answer"])


def _profile(name: str) -> Profile:
    try:
        return start(name)
    except KeyError as e:
        raise TaskpackError(str(e.args[0])) from None
    except Unavailable as e:
        raise TaskpackError(str(e)) from None


@dataclass
class Comparison:
    """Where the math profiles part on a completions file: per class of gold answer, how
    many completions, how many each profile passes, how many not all agree on, and examples
    of those (id, gold answer, the reply's end, the profiles that pass it)."""

    profiles: list[str]
    missing: dict[str, str]  # profile -> why it did not run
    classes: dict[str, Counter[str]] = field(default_factory=dict)
    examples: dict[str, list[tuple[str, str, str, list[str]]]] = field(default_factory=dict)
    skipped: int = 0  # completions of tasks no profile scores (not math)

    def add(self, task_id: str, answer: str, reply: str, passed: list[str]) -> None:
        kind = answer_class(answer)
        counts = self.classes.setdefault(kind, Counter())
        counts["completions"] += 1
        counts.update(passed)
        if 0 < len(passed) < len(self.profiles):
            counts["split"] += 1
            shown = self.examples.setdefault(kind, [])
            if len(shown) < 3:
                end = " ".join(reply[-70:].split())
                shown.append((task_id, answer, end, passed))

    def table(self) -> str:
        names = self.profiles
        head = ["class", "completions", *names, "profiles part"]
        rows = [
            [kind, str(c["completions"]), *(str(c[n]) for n in names), str(c["split"])]
            for kind, c in sorted(self.classes.items(), key=lambda kv: -kv[1]["split"])
        ]
        total: Counter[str] = sum(self.classes.values(), Counter())
        rows.append(["all", str(total["completions"]), *(str(total[n]) for n in names),
                     str(total["split"])])  # fmt: skip
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        lines = [
            "  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)) for r in [head, *rows]
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        for kind, shown in self.examples.items():
            lines.append(f"{kind}:")
            for task_id, answer, end, passed in shown:
                lines.append(f"  {task_id}: gold {answer!r}, reply ...{end!r}: "
                             f"passed by {', '.join(passed)}")  # fmt: skip
        lines += [f"not run: {n} ({why})" for n, why in self.missing.items()]
        if self.skipped:
            lines.append(f"{self.skipped} completions of tasks that are not math were left out")
        return "\n".join(lines)


def compare(
    target: str | os.PathLike[str] | TaskSet,
    completions: str | os.PathLike[str],
    *,
    split: str | None = None,
    jobs: int | None = None,
    registry: Any = None,
    quiet: bool = True,
) -> Comparison:
    """Every math profile on every completion of a math task in `completions`: where they
    part, by the class of the gold answer (`Comparison.table()` prints it). A profile whose
    package is missing is named, with why, and left out."""
    from taskpack.base.progress import counted
    from taskpack.curation.steps import open_target

    ready, missing = [], {}
    for name in PROFILES:
        try:
            ready.append(start(name))
        except Unavailable as e:
            missing[name] = str(e)
    ts = open_target(target, registry)
    source = Path(completions)
    total = sum(1 for _ in _lines(source))
    report = Comparison([p.name for p in ready], missing)

    def verdicts(reply: str, answer: str) -> list[str]:
        return [p.name for p in ready if p.same(reply, answer)]

    def work() -> Iterator[tuple[tuple[str, str, str], Callable[[], list[str]]]]:
        for n, text in counted(_lines(source), "compared", total, quiet):
            row, task = _task(ts, text, f"{source}:{n}", split)
            if task.reward is None or task.reward.kind not in MATH_KINDS:
                report.skipped += 1
                continue
            answer, reply = gold(task), row["completion"]
            yield (task.id, answer, reply), partial(verdicts, reply, answer)

    def add(key: tuple[str, str, str], passed: list[str]) -> None:
        report.add(*key, passed)

    _in_order(jobs, work(), add)
    return report
