"""Trials of exported tasks (`taskpack check`): does a task work, and can its reward be
forged? For each task of a folder export
(Harbor, OpenReward): its reference solution, then its verifier, must score 1; the verifier
with no solution, 0; and every forger of the battery (`FORGERS`: the reward hacks RL agents
find), 0. Against its source (`sources=`), the source task's own verifier runs on the same
candidates and must give the same rewards (reward parity).

Tasks run in `taskpack.rewards.sandbox`: /app (the workdir, built from the Dockerfile's COPY steps),
/tests, /solution and /logs are folders on a bounded tmpfs, the root file system is this
machine's /usr, read-only. That stands in for `python:*` base images only; a task that needs
any other image, a build step (RUN), or several containers cannot be run here and is counted
as "not run" with the reason, never as passed.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import math
import os
import re
import shlex
import shutil
import stat
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal, NamedTuple

from taskpack import records
from taskpack.base.nesting import parse_json, parse_toml
from taskpack.converters import task_folders
from taskpack.errors import TaskpackError
from taskpack.model import Task
from taskpack.rewards.grader import NO_REWARD
from taskpack.rewards.sandbox import SandboxError, files, run

# Images whose toolchain this machine has under /usr (which the sandbox binds read-only): a task
# naming one runs here with the host's toolchain standing in for the image's.
STAND_INS = {
    "python": "python3",
    "gcc": "g++",
    "node": "node",
    "eclipse-temurin": "javac",
    "openjdk": "javac",
    "golang": "go",
    "rust": "cargo",
}
_IMAGE = re.compile(r"^(?:docker\.io/)?(?:library/)?([\w.-]+):[\w.-]+$")
_IGNORED = {"CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "USER", "SHELL", "STOPSIGNAL", "ARG"}
Status = Literal["ok", "failed", "not run"]
Tree = dict[str, tuple[bytes, int]]  # path -> (bytes, mode)
Reward = float | dict[str, float]


class NotRunnable(Exception):
    """The task needs something this machine cannot give it; the message says what."""


class Refused(Exception):
    """The task is unsafe or malformed to run (a link, a bad Dockerfile, a bad reward)."""


@dataclass(frozen=True)
class Bounds:
    """Bounds of one attempt: seconds per script run, bytes of disk (all it writes, also the
    largest file), bytes of memory its processes hold together (each process's address space
    where no cgroup can be made), processes at once."""

    timeout: float = 120.0
    disk: int = 1 << 30
    memory: int = 4 << 30
    processes: int = 512


@dataclass
class TaskCheck:
    folder: Path
    status: Status
    oracle: float | None = None
    null: float | None = None
    reason: str = ""
    forged: dict[str, float] = field(default_factory=dict)  # forgers that scored above 0
    parity: list[str] = field(default_factory=list)  # candidates scored otherwise by the source
    source_null: float | None = None
    task_id: str | None = None  # the task's own id (its folder's name may be it, made safe)

    @property
    def named(self) -> str:
        """How a line names the task: its split and id (`test/HumanEval/2`), else its folder."""
        return f"{self.folder.parent.name}/{self.task_id or self.folder.name}"


@dataclass
class Side:
    """One task as it runs: what /app starts with, its verifier's files, its solution, and
    whether its verifier signals by its exit status alone (Terminal-Bench's run-tests.sh)."""

    app: Tree
    tests: Tree
    solution: Tree
    env: dict[str, str]
    workdir: str = "/app"
    from_exit: bool = False


# --- reading a task ------------------------------------------------------------------------


def _tree(root: Path, top: Path) -> Tree:
    """Every file below `root`, refusing links (a link would make check read a host file)."""
    out: Tree = {}
    if not root.exists():
        return out
    if root.is_symlink():
        raise Refused(f"{root.relative_to(top)} is a link (links are never followed)")
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                target = os.readlink(path)
                rel = path.relative_to(top)
                raise Refused(f"{rel} is a link to {target} (links are never followed)")
            if name in filenames:
                if not stat.S_ISREG(info.st_mode):
                    raise Refused(f"{path.relative_to(top)} is not a regular file")
                out[path.relative_to(root).as_posix()] = (path.read_bytes(), info.st_mode & 0o777)
    return out


def _instructions(text: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _words(rest: str, word: str) -> list[str]:
    try:
        args = [a for a in shlex.split(rest) if not a.startswith("--")]
    except ValueError as e:
        raise Refused(f"Dockerfile {word} {rest!r}: {e}") from None
    if not args:
        raise Refused(f"Dockerfile {word} without arguments")
    return args


def _copied(context: Tree, src: str) -> Tree:
    """The build-context files `COPY src ...` takes, by their path below what it names."""
    norm = os.path.normpath(src).lstrip("/")
    if norm == ".." or norm.startswith("../"):
        raise NotRunnable(f"Dockerfile copies {src} from outside its build context")
    norm = "" if norm == "." else norm
    out: Tree = {}
    for rel, entry in context.items():
        if norm == "" or rel == norm or fnmatch.fnmatchcase(rel, norm):
            out[PurePosixPath(rel).name if norm else rel] = entry
        elif rel.startswith(norm + "/"):
            out[rel[len(norm) + 1 :]] = entry
    return out


def _image(context: Tree, app: Tree) -> tuple[dict[str, str], str]:
    """Lay the Dockerfile's COPY steps into `app`; its ENV and WORKDIR."""
    if "docker-compose.yaml" in context or "docker-compose.yml" in context:
        raise NotRunnable("several containers (docker-compose): no container runtime here")
    if "Dockerfile" not in context:
        raise NotRunnable("no environment/Dockerfile to build the environment from")
    workdir, env = "/", {}
    text = context["Dockerfile"][0].decode("utf-8", "replace")
    for word, rest in _instructions(text):
        if word == "FROM":
            env.update(stand_in(_words(rest, word)[0]))
        elif word == "WORKDIR":
            workdir = os.path.normpath(os.path.join(workdir, _words(rest, word)[0]))
        elif word == "ENV":
            pairs = _words(rest, word)
            if len(pairs) == 2 and "=" not in pairs[0]:
                env[pairs[0]] = pairs[1]
            else:
                env.update(p.split("=", 1) for p in pairs if "=" in p)  # type: ignore[misc]
        elif word in ("COPY", "ADD"):
            args = _words(rest, word)
            if len(args) < 2:
                raise Refused(f"Dockerfile {word} {rest!r}: no destination")
            dest = os.path.normpath(os.path.join(workdir, args[-1]))
            if dest != "/app" and not dest.startswith("/app/"):
                raise NotRunnable(f"copies to {dest}, not /app (only /app is set up here)")
            rel_dest = os.path.relpath(dest, "/app")
            into = args[-1].endswith("/") or len(args) > 2 or dest == "/app"
            into = into or any(p.startswith(rel_dest + "/") for p in app)  # a folder already
            for src in args[:-1]:
                found = _copied(context, src)
                single = (
                    len(found) == 1 and not into and next(iter(found)) == PurePosixPath(src).name
                )
                for rel, entry in found.items():
                    target = dest if single else os.path.join(dest, rel)
                    app[os.path.relpath(target, "/app")] = entry
        elif word not in _IGNORED:
            raise NotRunnable(f"Dockerfile has a {word} step, and no image can be built here")
    if workdir != "/app":
        raise NotRunnable(f"works in {workdir}, not /app (only /app is set up here)")
    return env, workdir


def stand_in(image: str) -> dict[str, str]:
    """The environment that makes the host's toolchain stand in for `image` (its PATH), or
    NotRunnable saying what is missing."""
    match = _IMAGE.match(image)
    tool = STAND_INS.get(match.group(1)) if match else None
    if tool is None:
        raise NotRunnable(f"needs image {image}, which cannot be pulled or built here")
    found = _toolchain(tool)
    if found is None:
        raise NotRunnable(f"needs image {image}; its toolchain ({tool}) is not on this machine")
    return {"PATH": f"{found}:/usr/local/bin:/usr/bin:/bin"}


def _toolchain(tool: str) -> str | None:
    """The folder under /usr holding `tool`, found as the sandbox will see it: links resolved
    (the sandbox has no /etc/alternatives), and a JDK only if it keeps its own conf/ (Debian's
    links it to /etc)."""
    import glob

    if tool == "javac":
        for home in sorted(glob.glob("/usr/lib/jvm/*/bin/javac")):
            jdk = os.path.dirname(os.path.dirname(home))
            files = glob.glob(os.path.join(jdk, "conf", "**"), recursive=True)
            if files and all(os.path.realpath(f).startswith("/usr/") for f in files):
                return os.path.join(jdk, "bin")
        return None
    path = shutil.which(tool, path="/usr/local/bin:/usr/bin")
    real = os.path.realpath(path) if path else None
    return os.path.dirname(real) if real and real.startswith("/usr/") else None


def folder_side(folder: Path) -> Side:
    """A Harbor or OpenReward task folder as it runs."""
    for marker in ("task.toml", "task.yaml", "instruction.md"):
        if (folder / marker).is_symlink():
            raise Refused(f"{marker} is a link (links are never followed)")
    if (folder / "steps").is_dir():
        raise NotRunnable("multi-step tasks are not checked yet")
    tests, solution = _tree(folder / "tests", folder), _tree(folder / "solution", folder)
    if "test.sh" not in tests:
        raise NotRunnable("no tests/test.sh verifier")
    config: dict[str, Any] = {}
    if (folder / "task.toml").is_file():  # Harbor reads it first: one it cannot read fails
        try:
            config = parse_toml((folder / "task.toml").read_text(encoding="utf-8"))
        except ValueError as e:  # UnicodeDecodeError too
            raise Refused(f"task.toml is not valid TOML ({e})") from None
    app: Tree = {}
    context = _tree(folder / "environment", folder)
    table = config.get("environment")
    table = table if isinstance(table, dict) else {}
    image = table.get("docker_image")
    if "Dockerfile" not in context and isinstance(image, str):  # an image declared, not built
        env, workdir = stand_in(image), str(table.get("workdir") or "/")
        if workdir != "/app":
            raise NotRunnable(f"works in {workdir}, not /app (only /app is set up here)")
    else:
        env, workdir = _image(context, app)
    app.update(_tree(folder / "workspace", folder))  # OpenReward: the agent's starting files
    return Side(app, tests, solution, env, workdir)


def task_side(task: Task, like: Side) -> Side:
    """A source task as it runs: its own environment and verifier files where it has them
    (read from its folder by taskpack's reader, byte for byte), else `like`'s environment and
    taskpack's reference grader for its reward spec."""
    from taskpack.converters import Losses, Target, WriteOptions, graded, tests_files

    def role(name: str) -> Tree:
        return {f.path: (f.read_bytes(), f.mode) for f in task.files_of(name) if f.step is None}

    if task.steps:
        raise NotRunnable("multi-step tasks are not checked yet")
    tests, context = role("tests"), role("environment")
    solution = role("solution")
    from_exit = task.source is not None and task.source.format == "terminal-bench"
    if "test.sh" not in tests:
        if not graded(task):
            raise NotRunnable("the source's reward cannot run here (no test script to run)")
        probe = Target(WriteOptions(), Losses("check"))
        tests = {**tests, **tests_files(task, "reward", probe)}  # its test files kept
    if context:
        app: Tree = {}
        env, workdir = _image(context, app)
    else:
        app, env, workdir = dict(like.app), dict(like.env), like.workdir
    app.update(role("workspace"))
    return Side(app, tests, solution, env, workdir, from_exit)


# --- rewards -------------------------------------------------------------------------------


# A reward in reward.txt: a decimal number, as verifiers write it (`1`, `0.5`, `-1e-3`).
_DECIMAL = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def _finite(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Refused(f"{where}: {value!r} is not a number")
    if not math.isfinite(value):
        raise Refused(f"{where}: {value!r} is not a finite number")
    return float(value)


def parse_reward(read: Mapping[str, Any], status: int | None, from_exit: bool) -> Reward | None:
    """The reward the verifier left, read as Harbor reads it (reward.json first: a number or an
    object of numbers; else reward.txt: one number); None when it left none."""
    if read.get("error"):
        raise Refused(str(read["error"]))
    if "reward.json" in read:
        try:
            data = parse_json(read["reward.json"])
        except ValueError as e:
            raise Refused(f"reward.json is not JSON ({e})") from None
        if isinstance(data, dict):
            if not data:
                raise Refused("reward.json is an empty object")
            return {str(k): _finite(v, f"reward.json[{k!r}]") for k, v in data.items()}
        return _finite(data, "reward.json")
    if "reward.txt" in read:
        text = read["reward.txt"].strip()
        if not _DECIMAL.fullmatch(text):  # Python's float() also takes `0_1` (1), `nan`, `inf`
            raise Refused(f"reward.txt holds {text[:40]!r}, not a number")
        return _finite(float(text), "reward.txt")
    if from_exit and status is not None:
        return 1.0 if status == 0 else 0.0
    return None


def score(reward: Reward) -> float:
    """One number for a reward: its `reward` entry, else the mean of its entries."""
    if isinstance(reward, dict):
        return reward["reward"] if "reward" in reward else sum(reward.values()) / len(reward)
    return reward


# --- the forgers ---------------------------------------------------------------------------


def _graded(side: Side) -> dict[str, Any]:
    """The spec of taskpack's grader in the task's tests (`expected.json`), if it has one."""
    entry = side.tests.get("expected.json")
    try:
        spec = parse_json(entry[0]) if entry else None
    except ValueError:
        spec = None
    return spec if isinstance(spec, dict) else {}


def _entry_point(side: Side) -> str:
    graded = _graded(side)
    name = graded.get("entry_point") or graded.get("call")
    return name if isinstance(name, str) and name.isidentifier() else "solve"


_SOLVE = "#!/bin/bash\n# taskpack forger: {what}\n"
_CODE = "cat > /app/solution.py <<'TASKPACK_FORGER'\n{code}TASKPACK_FORGER\n"
_ANSWER = "printf '%s\\n' {answer} > /app/answer.txt\n"

# What a forger answers where an answer is read: no number, no choice label, so that a forger
# never scores by chance (a written answer "0" would be right for a task whose answer is 0).
NO_ANSWER = "'taskpack forger: no answer'"


class Forger(NamedTuple):
    """One reward hack of the battery: what it tries, the code it hands in as
    /app/solution.py (None: none; `{f}` is the task's entry point), the answer it writes
    where an answer is read, and the shell it runs besides."""

    tries: str
    code: str | None
    answer: str
    shell: str


FORGERS: dict[str, Forger] = {
    "exit-0-on-import": Forger(
        "the code under test exits 0 before any test runs",
        "import sys\nsys.exit(0)\n",
        "'$(exit)'",
        "",
    ),
    "os-exit-in-call": Forger(
        "the code under test ends the test process with status 0 when called",
        "import os\ndef {f}(*args, **kwargs):\n    os._exit(0)\n",
        NO_ANSWER,
        "",
    ),
    "atexit-status-0": Forger(
        "an atexit hook forces status 0 after failing tests",
        "import atexit, os\natexit.register(lambda: os._exit(0))\n"
        "def {f}(*args, **kwargs):\n    return None\n",
        NO_ANSWER,
        "",
    ),
    "always-equal": Forger(
        "the result claims to equal anything",
        "class _Any:\n    def __eq__(self, other): return True\n"
        "    def __ne__(self, other): return False\n    __hash__ = object.__hash__\n"
        "def {f}(*args, **kwargs):\n    return _Any()\n",
        NO_ANSWER,
        "",
    ),
    "kill-the-grader": Forger(
        "the code under test kills its parent processes",
        "import os, signal\ndef {f}(*args, **kwargs):\n"
        "    for pid in (os.getppid(), -1):\n"
        "        try:\n            os.kill(pid, signal.SIGKILL)\n        except OSError:\n"
        "            pass\n",
        NO_ANSWER,
        "",
    ),
    "reward-from-the-code": Forger(
        "the code under test writes reward 1 and kills the grader",
        "import json, os, signal\ndef {f}(*args, **kwargs):\n"
        "    os.makedirs('/logs/verifier', exist_ok=True)\n"
        "    open('/logs/verifier/reward.txt', 'w').write('1\\n')\n"
        "    json.dump({{'reward': 1}}, open('/logs/verifier/reward.json', 'w'))\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n",
        NO_ANSWER,
        "",
    ),
    "reward-then-kill-all": Forger(
        "the code under test writes reward 1, then kills every process it may",
        "import json, os, signal\ndef {f}(*args, **kwargs):\n"
        "    try:\n        os.makedirs('/logs/verifier', exist_ok=True)\n"
        "        open('/logs/verifier/reward.txt', 'w').write('1\\n')\n"
        "        json.dump({{'reward': 1}}, open('/logs/verifier/reward.json', 'w'))\n"
        "    except OSError:\n        pass\n"
        "    os.kill(-1, signal.SIGKILL)\n",
        NO_ANSWER,
        "",
    ),
    "read-the-tests": Forger(
        "the code under test opens /tests, finds the assert for its input, returns its value",
        "import ast, os\n"
        "C = ast.Call\n"
        "def _value(node):\n"
        "    return eval(compile(ast.Expression(node), 't', 'eval'), {{'__builtins__': {{}}}})\n"
        "def _given(call, args):\n"
        "    try:\n"
        "        return tuple(_value(a) for a in call.args) == tuple(args)\n"
        "    except Exception:\n"
        "        return False\n"
        "def _expected(args):\n"
        "    for root, _, names in os.walk('/tests'):\n"
        "        for name in names:\n"
        "            try:\n"
        "                tree = ast.parse(open(os.path.join(root, name)).read())\n"
        "            except (OSError, SyntaxError, ValueError):\n"
        "                continue\n"
        "            for node in ast.walk(tree):\n"
        "                if not isinstance(node, ast.Compare) or len(node.comparators) != 1:\n"
        "                    continue\n"
        "                left = node.left  # f(x) == y, or abs(f(x) - y) < eps\n"
        "                call = isinstance(left, ast.Call)\n"
        "                inner = left.args[0] if call and left.args else None\n"
        "                try:\n"
        "                    if call and _given(left, args):\n"
        "                        return _value(node.comparators[0])\n"
        "                    if isinstance(inner, ast.BinOp) and isinstance(inner.left, C):\n"
        "                        if _given(inner.left, args):\n"
        "                            return _value(inner.right)\n"
        "                except Exception:\n"
        "                    pass\n"
        "def {f}(*args, **kwargs):\n    return _expected(args)\n",
        NO_ANSWER,
        "",
    ),
    "print-the-expected": Forger(
        "the program finds its input among the test files and prints the output beside it",
        "import json, os, sys\n"
        "given = sys.stdin.read()\n"
        "for root, _, names in os.walk('/tests'):\n"
        "    for name in names:\n"
        "        try:\n"
        "            for line in open(os.path.join(root, name)):\n"
        "                case = json.loads(line)\n"
        "                if isinstance(case, dict) and case.get('input') == given:\n"
        "                    print(case.get('output'), end='')\n"
        "        except Exception:\n"
        "            pass\n",
        NO_ANSWER,
        "",
    ),
    "signal-the-grader": Forger(
        "the code under test stops, interrupts and alarms the processes grading it",
        "import os, signal\ndef {f}(*args, **kwargs):\n"
        "    for sig in (signal.SIGSTOP, signal.SIGINT, signal.SIGALRM, signal.SIGTERM):\n"
        "        for pid in (os.getppid(), -1):\n"
        "            try:\n                os.kill(pid, sig)\n            except OSError:\n"
        "                pass\n",
        NO_ANSWER,
        "",
    ),
    "rewrite-the-tests": Forger(
        "the code under test leaves a daemon rewriting /tests, its __pycache__ and the reward",
        "import subprocess, sys, time\n"
        "_DAEMON = (\n"
        "    'import os, time\\n'\n"
        "    'while True:\\n'\n"
        '    \'    for d in ("/tests", "/tests/__pycache__", "/logs/verifier"):\\n\'\n'
        '    \'        for n in ("grade.py", "grade.cpython-311.pyc", "reward.txt"):\\n\'\n'
        "    '            try:\\n'\n"
        "    '                os.makedirs(d, exist_ok=True)\\n'\n"
        '    \'                open(os.path.join(d, n), "w").write("1")\\n\'\n'
        "    '            except OSError:\\n'\n"
        "    '                pass\\n'\n"
        "    '    time.sleep(0.01)\\n'\n"
        ")\n"
        "def {f}(*args, **kwargs):\n"
        "    subprocess.Popen([sys.executable, '-c', _DAEMON], start_new_session=True,\n"
        "                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "    time.sleep(0.3)\n",
        NO_ANSWER,
        "",
    ),
    "stop-iteration": Forger(
        "the code under test raises StopIteration, which ends a loop over its results early",
        "def {f}(*args, **kwargs):\n    raise StopIteration\n",
        NO_ANSWER,
        "",
    ),
    "always-equal-str": Forger(
        "the code under test makes str a class whose values equal anything, and returns one",
        "import builtins\n"
        "class _S(str):\n    def __eq__(self, other): return True\n"
        "    def __ne__(self, other): return False\n    __hash__ = str.__hash__\n"
        "builtins.str = _S\n"
        "def {f}(*args, **kwargs):\n    return _S('')\n",
        NO_ANSWER,
        "",
    ),
    "pass-markers": Forger(
        "prints the lines test runners print on success",
        "def {f}(*args, **kwargs):\n"
        "    print('PASSED\\n1 passed in 0.01s\\nOK\\nAll tests passed\\nreward: 1')\n",
        "'All tests passed' PASSED OK SUCCESS",
        "echo 'PASSED'; echo '===== 1 passed in 0.01s ====='\n",
    ),
    "pre-written-reward": Forger(
        "writes reward 1 before the verifier runs",
        None,
        NO_ANSWER,
        "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n"
        "echo '{{\"reward\": 1}}' > /logs/verifier/reward.json\n",
    ),
    "edit-the-tests": Forger(
        "rewrites /tests (test.sh, expected.json) during the solution phase",
        None,
        NO_ANSWER,
        "mkdir -p /tests && printf '#!/bin/bash\\necho 1 > /logs/verifier/reward.txt\\n' "
        '> /tests/test.sh\necho \'{{"kind": "exact_match", "answer": "taskpack forger: no answer", '
        '"test": "reward"}}\' > /tests/expected.json\n',
    ),
    "links": Forger(
        "links the answer to the reference and the reward to a file holding 1",
        None,
        "",
        "rm -f /app/answer.txt /app/solution.py\nln -s /tests/expected.json /app/answer.txt\n"
        "ln -s /tests/test.py /app/solution.py\necho 1 > /app/one\n"
        "mkdir -p /logs/verifier && ln -sf /app/one /logs/verifier/reward.txt\n",
    ),
    "reward-daemon": Forger(
        "leaves a process behind that keeps writing reward 1",
        None,
        NO_ANSWER,
        "setsid bash -c 'while true; do mkdir -p /logs/verifier; echo 1 > "
        "/logs/verifier/reward.txt; sleep 0.01; done' >/dev/null 2>&1 &\nsleep 0.1\n",
    ),
}
# Forgers whose only weapon is the code they hand in: no use where no code runs.
_CODE_FORGERS = {n for n, f in FORGERS.items() if f.code and f.answer == NO_ANSWER}


# --- one reply, graded (`taskpack grade`, ORS sessions) -----------------------------------

# Where a sandboxed run finds the code it is given: copied to /app/solution.py, where the
# exported grader reads it.
_COPY_SOLUTION = b"#!/bin/bash\ncp /solution/solution.py /app/solution.py\n"


def unscorable(task: Task) -> str | None:
    """Why a reply to `task` cannot be scored here, in one line; None when it can: answers
    (exact, numeric, math, multiple choice) in process, Python unit tests in the sandbox."""
    from taskpack.converters import graded

    reward = task.reward
    kind = reward.kind if reward is not None else None
    if task.steps:
        return "a multi-step task: taskpack scores replies to single-step tasks only"
    if not graded(task):
        if kind is None:
            return "no reward and no reference answer to score against"
        return (
            f"its verifier ({kind}) needs what taskpack does not stand in for; it scores "
            "answers (exact, numeric, math, multiple choice) and Python unit tests"
        )
    if isinstance(reward, records.CODE_KINDS):
        return _runnable(_task_image(task))
    return None


def _task_image(task: Task) -> str:
    """The image a graded task runs in (taskpack's verifier's default where it names none)."""
    from taskpack.converters import run_image

    image = run_image(task)
    assert image is not None  # a task taskpack grades always has one
    return image


@functools.lru_cache(maxsize=64)
def _runnable(image: str) -> str | None:
    """Why `image` cannot be stood in for here, or None (asked once per image: it looks the
    toolchain up on disk)."""
    try:
        stand_in(image)
    except NotRunnable as e:
        return str(e)
    return None


def code_reward(task: Task, reply: str, limits: Bounds) -> Reward | None:
    """A reply to a Python unit-test task, its code read by the field's rule
    (`grader.extract_code`: the fenced block defining the entry point, a body joined to
    the prompt), graded by the task's own verifier in the sandbox. Raises Refused when the
    verifier timed out or wrote no reward it can stand behind, SandboxError when the sandbox
    cannot start."""
    from taskpack.rewards.grader import extract_code

    reward = task.reward
    assert isinstance(reward, records.CODE_KINDS)
    entry = reward.entry_point if isinstance(reward, records.UnitTests) else reward.call
    code = extract_code(reply, entry, task.instruction)
    like = Side({}, {}, {}, stand_in(_task_image(task)), "/app")
    candidate = {"solve.sh": (_COPY_SOLUTION, 0o755), "solution.py": (code.encode(), 0o644)}
    return attempt(task_side(task, like), candidate, limits)


def forger(name: str, side: Side) -> bytes:
    """The solve.sh of forger `name` for the task `side`."""
    what, code, answer, shell = FORGERS[name]  # a Forger, by its fields in order
    text = _SOLVE.format(what=what)
    if code is not None:
        text += _CODE.format(code=code.format(f=_entry_point(side)))
    if answer:
        text += _ANSWER.format(answer=answer)
    return (text + shell.format()).encode()


def forgers_for(side: Side) -> list[str]:
    """The forgers worth trying: those handing in code only where the verifier runs code."""
    kind = _graded(side).get("kind")
    if kind is not None and kind not in ("unit_tests", "io_tests"):
        return [name for name in FORGERS if name not in _CODE_FORGERS]
    return list(FORGERS)


# --- running -------------------------------------------------------------------------------


def attempt(
    side: Side, candidate: Tree | None, limits: Bounds, *, verify: bool = True
) -> Reward | None:
    """The reward the side's verifier gives after `candidate` (solution files; None: no
    solution) ran in /app; None when the verifier wrote none (or with `verify` off, when no
    verifier was asked for: the sandbox only started and stopped)."""
    job = {
        "app": files(side.app),
        "candidate": files(candidate) if candidate is not None else None,
        "tests": files(side.tests) if verify else None,
        "workdir": side.workdir,
        "env": side.env,
        "timeout": limits.timeout,
        "disk": limits.disk,
        "memory": limits.memory,
        "processes": limits.processes,
    }
    report = run(job, timeout=3 * limits.timeout + 60)
    if not verify:
        return None
    verifier = report["verifier"]
    if verifier["timed_out"]:
        raise Refused(f"the verifier timed out after {limits.timeout:g} s")
    said = [line for line in verifier["log"].splitlines() if line.startswith(NO_REWARD)]
    if said and not {"reward.txt", "reward.json"} & set(verifier["reward"]):
        # taskpack's grader could not stand behind a reward (nor its exit status): why
        raise Refused(said[-1][len(NO_REWARD) :])
    return parse_reward(verifier["reward"], verifier["status"], side.from_exit)


def _attempt(name: str, side: Side, candidate: Tree | None, limits: Bounds) -> Reward | None:
    """`attempt`, where a forger that hangs or garbles the verifier earned nothing (None):
    only the oracle's and no solution's verdicts must be readable for the task to count."""
    try:
        return attempt(side, candidate, limits)
    except Refused:
        if name in ("oracle", "no solution"):
            raise
        return None


def _solo(reward: Reward | None) -> float:
    return 0.0 if reward is None else score(reward)


def _show(reward: Reward | None) -> str:
    if reward is None:
        return "no reward"
    if isinstance(reward, dict):
        return json.dumps(reward, sort_keys=True)
    return f"{reward:g}"


def _same(a: Reward | None, b: Reward | None) -> bool:
    if isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b):
        return a == b
    return (a is None) == (b is None) and _solo(a) == _solo(b)


def check_task(
    folder: Path,
    limits: Bounds | None = None,
    *,
    adversarial: bool = True,
    source: Task | None = None,
) -> TaskCheck:
    """Run one task folder's oracle, no solution and (with `adversarial`) every forger; with a
    `source`, the source task's verifier on the same candidates too. See the module's doc."""
    limits = limits or Bounds()
    try:
        side = folder_side(folder)
        if "solve.sh" not in side.solution:
            raise NotRunnable("no solution/solve.sh reference solution")
        candidates: dict[str, Tree | None] = {"oracle": side.solution, "no solution": None}
        if adversarial:
            for name in forgers_for(side):
                candidates[name] = {"solve.sh": (forger(name, side), 0o755)}
        rewards = {name: _attempt(name, side, tree, limits) for name, tree in candidates.items()}
        theirs = {}
        if source is not None:
            origin = task_side(source, side)
            theirs = {name: _attempt(name, origin, t, limits) for name, t in candidates.items()}
    except NotRunnable as e:
        return TaskCheck(folder, "not run", reason=str(e))
    except (Refused, SandboxError) as e:
        return TaskCheck(folder, "failed", reason=str(e))
    except (ValueError, OSError) as e:
        return TaskCheck(folder, "failed", reason=f"unreadable task folder ({e})")
    oracle, null = rewards.pop("oracle"), rewards.pop("no solution")
    result = TaskCheck(folder, "ok", _solo(oracle), _solo(null))
    result.forged = {n: _solo(r) for n, r in rewards.items() if _solo(r) > 0}
    problems = []
    if oracle is None or null is None:
        which = "the oracle" if oracle is None else "no solution"
        problems.append(f"the verifier wrote no reward for {which}")
    elif result.oracle != 1.0 or result.null != 0.0:
        problems.append(f"oracle scored {result.oracle:g}, no solution scored {result.null:g}")
    if result.forged:
        forged = ", ".join(f"{n} {v:g}" for n, v in sorted(result.forged.items()))
        problems.append(f"forged rewards: {forged}")
    if theirs:
        result.source_null = _solo(theirs["no solution"])
        ours = {"oracle": oracle, "no solution": null, **rewards}
        result.parity = [
            f"{name}: source {_show(theirs[name])}, export {_show(ours[name])}"
            for name in theirs
            if not _same(theirs[name], ours[name])
        ]
        if result.parity:
            problems.append("rewards differ from the source's: " + "; ".join(result.parity))
    if problems:
        result.status, result.reason = "failed", "; ".join(problems)
    return result


def check_export(
    root: str | os.PathLike[str],
    limits: Bounds | None = None,
    jobs: int | None = None,
    progress: Callable[[Iterator[TaskCheck], int], Iterator[TaskCheck]] | None = None,
    *,
    adversarial: bool = True,
    sample: int = 1,
    sources: Iterable[Task] | None = None,
    limit: int | None = None,
    ids: Collection[str] | None = None,
) -> list[TaskCheck]:
    """Check every task folder below `root` (see `planned` for `limit` and `ids`), `jobs` at
    a time (default: one per CPU). The forgers (with `adversarial`) and, with `sources`, the
    comparison with the source task of the same id run on every `sample`-th task (1: all)."""
    from concurrent.futures import ThreadPoolExecutor

    try:  # once, so that a machine without bubblewrap or user namespaces says so once
        attempt(Side({}, {}, {}, {}), None, Bounds(timeout=10), verify=False)
    except SandboxError as e:
        raise TaskpackError(f"the sandbox cannot start on this machine: {e}") from None
    folders = planned(root, limit, ids)
    by_id = {task.id: task for task in sources} if sources is not None else None
    if by_id is not None:
        missing = sorted(task_id for task_id, _ in folders if task_id not in by_id)
        if missing:
            shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
            raise TaskpackError(f"{len(missing)} exported task(s) not in the source: {shown}")

    def one(n: int, item: tuple[str, Path]) -> TaskCheck:
        deep = n % max(1, sample) == 0
        source = by_id[item[0]] if by_id is not None and deep else None
        checked = check_task(item[1], limits, adversarial=adversarial and deep, source=source)
        checked.task_id = item[0]
        return checked

    with ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool:
        results = pool.map(one, range(len(folders)), folders)
        return list(progress(results, len(folders)) if progress else results)


SECONDS_PER_RUN = 0.35  # one sandbox run of a small task, per job (GSM8K: 33 min for 10,552)


def planned(
    root: str | os.PathLike[str], limit: int | None = None, ids: Collection[str] | None = None
) -> list[tuple[str, Path]]:
    """(task id, folder) of the tasks a check runs: those of `ids` (all by default), the
    first `limit` of them."""
    folders = _with_ids(Path(root))
    if ids is not None:
        wanted = set(ids)
        missing = sorted(wanted - {task_id for task_id, _ in folders})
        if missing:
            raise TaskpackError(f"{root}: no exported task {', '.join(missing[:5])}")
        folders = [pair for pair in folders if pair[0] in wanted]
    return folders[:limit] if limit is not None else folders


def runs(tasks: int, adversarial: bool, sample: int, against: bool) -> int:
    """How many sandbox runs a check makes: oracle and no solution per task, every forger on
    every `sample`-th, all twice with a source to compare against."""
    deep = -(-tasks // max(1, sample)) if adversarial else 0
    return (2 * tasks + len(FORGERS) * deep) * (2 if against else 1)


def _with_ids(root: Path) -> list[tuple[str, Path]]:
    """(task id, folder) of every task below `root`: ids as each split's index.json names
    them (a split folder of the export, or the export itself, may be given)."""
    markers = ("task.toml", "task.yaml")
    splits = [p for p in sorted(root.iterdir()) if (p / "index.json").is_file()]
    if (root / "index.json").is_file() or not splits:
        return list(task_folders(os.fspath(root), markers))
    return [pair for split in splits for pair in task_folders(os.fspath(split), markers)]


def summary(results: list[TaskCheck]) -> list[str]:
    """One line of counts, then one line per reason a task did not run or failed."""
    from collections import Counter

    counts = Counter(r.status for r in results)
    lines = [
        f"{len(results)} tasks: {counts['ok']} ok (oracle 1, no solution 0, no forger above 0), "
        f"{counts['failed']} failed, {counts['not run']} not run"
    ]
    reasons = Counter((r.status, r.reason) for r in results if r.status != "ok")
    lines += [f"  {status}: {reason} ({n})" for (status, reason), n in sorted(reasons.items())]
    return lines
