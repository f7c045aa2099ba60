"""What a SWE-bench task's test runner observed, written where the code under test does not write.

The harness grades the test command's printed output, so code under test that prints
`PASSED tests/test_x.py::test_y` (pytest), `test_y (x.Tests) ... ok` (Django) or `test_y ok`
(SymPy) passes tests it never ran. taskpack exports copy this file into `tests/swe_report/` as
`taskpack_swe_report.py`, beside a `sitecustomize.py` that calls `install()`; the verifier puts
that folder on PYTHONPATH with `TASKPACK_SWE_REPORT=<runner>:<key>:<report path>`.

The runner's own result hooks (pytest's `pytest_runtest_logreport`, unittest's `TextTestResult`,
SymPy's `PyTestReporter`) write each outcome to the report file, in the very line the runner
prints for it, and the key comes with every record; the grader reads only records with the
key, and only if the run's end record is there (a candidate that ends the process early gets
no end). The first process whose runner starts claims the report (`O_EXCL`) and takes the key
out of the environment, so test runs nested inside the tests are not counted.

Not covered (SECURITY.md): code that reads the key from the environment before the runner
starts or from this module's memory, and a candidate that replaces the test runner itself in
its own environment.

PYTEST_DONT_REWRITE: pytest would warn that this plugin was imported before it could rewrite
it (sitecustomize imports it first), and repositories that turn warnings into errors fail on it.

Stdlib only, and the syntax of Python 3.5, the oldest a SWE-bench image runs the tests with: no
f-strings, no variable annotations, `typing` names in signatures (ruff's UP rules are off here).
"""

import importlib
import importlib.abc
import importlib.util
import json
import os
import sys
from typing import Any, Dict, Optional, Tuple, cast

ENV = "TASKPACK_SWE_REPORT"
PLUGIN = "taskpack_swe_report"
HERE = os.path.dirname(os.path.abspath(__file__))
_claim = cast(Dict[str, Any], {})


def _settings() -> Optional[Tuple[str, str, str]]:
    runner, _, rest = os.environ.get(ENV, "").partition(":")
    key, _, path = rest.partition(":")
    return (runner, key, path) if runner and key and path else None


def _claimed() -> bool:
    """True in the one process that reports; the first runner to start claims the report."""
    if "fd" in _claim:
        return True
    settings = _settings()
    if settings is None:
        return False
    _, key, path = settings
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    except OSError:
        return False
    _claim.update(fd=fd, key=key)
    os.environ.pop(ENV, None)
    _drop("PYTHONPATH", os.pathsep, HERE)
    _drop("PYTEST_PLUGINS", ",", PLUGIN)
    return True


def _drop(variable: str, separator: str, item: str) -> None:
    """Takes this report out of a list-valued variable, so that nothing the tests start loads it."""
    kept = [p for p in os.environ.get(variable, "").split(separator) if p and p != item]
    if kept:
        os.environ[variable] = separator.join(kept)
    else:
        os.environ.pop(variable, None)


def _record(**fields: Any) -> None:
    if not _claimed():
        return
    fields["key"] = _claim["key"]
    os.write(_claim["fd"], (json.dumps(fields) + "\n").encode("utf-8"))


def line(text: str) -> None:
    """One outcome, as the runner prints it."""
    _record(line=text)


def end() -> None:
    """The runner reached its end: every outcome before this record is the whole run."""
    _record(end=True)


# pytest: loaded as a plugin through PYTEST_PLUGINS, which pytest reads before any conftest.py.


def pytest_addhooks(pluginmanager: Any) -> None:
    _claimed()


def pytest_configure(config: Any) -> None:
    if "config" not in _claim and _claimed():
        _claim["config"] = config


def pytest_runtest_logreport(report: Any) -> None:
    """The status `pytest -rA` prints for this phase of a test, under the name it prints."""
    config = _claim.get("config")
    if config is None:
        return
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        status = {"passed": "XPASS" if xfail else "PASSED", "failed": "FAILED"}.get(
            report.outcome, "XFAIL" if xfail else "SKIPPED"
        )
    elif report.failed:
        status = "ERROR"
    elif report.skipped:
        status = "XFAIL" if xfail else "SKIPPED"
    else:
        return
    line("{} {}".format(status, config.cwd_relative_nodeid(report.nodeid)))


def pytest_collectreport(report: Any) -> None:
    config = _claim.get("config")
    if config is not None and report.failed:
        line("ERROR " + config.cwd_relative_nodeid(report.nodeid))


def pytest_sessionfinish(session: Any) -> None:
    if session.config is _claim.get("config"):
        end()


# unittest (Django's runtests.py): the verbose line TextTestResult prints for each test.


def _unittest() -> None:
    import unittest

    result, runner = unittest.TextTestResult, unittest.TextTestRunner
    words = {
        "addSuccess": "ok",
        "addFailure": "FAIL",
        "addError": "ERROR",
        "addExpectedFailure": "expected failure",
        "addUnexpectedSuccess": "unexpected success",
    }

    def outcome(name: str, word: str) -> Any:
        original = getattr(result, name)

        def hooked(self: Any, test: Any, *args: Any) -> Any:
            if _claimed():
                line("{} ... {}".format(self.getDescription(test), word))
            return original(self, test, *args)

        return hooked

    for name, word in words.items():
        setattr(result, name, outcome(name, word))
    original_skip = result.addSkip

    def skip(self: Any, test: Any, reason: str) -> Any:
        if _claimed():
            line("{} ... skipped {!r}".format(self.getDescription(test), reason))
        return original_skip(self, test, reason)

    result.addSkip = skip  # type: ignore[method-assign]
    original_run = runner.run

    def run(self: Any, test: Any) -> Any:
        _claimed()
        outcome = original_run(self, test)
        for flavour, failed in (("ERROR", outcome.errors), ("FAIL", outcome.failures)):
            for case, _ in failed:  # the headers printErrors prints, which the parser reads too
                line("{}: {}".format(flavour, outcome.getDescription(case)))
        end()
        return outcome

    runner.run = run  # type: ignore[method-assign]


# SymPy's bin/test: its reporter's verbose `test_name ok` / `F` / `E` lines.


def _sympy_reporter(module: Any) -> None:
    """A test's line is kept until the next event: the reporter ends the last line of each file
    with `[OK]`/`[FAIL]`, which hides that test from the parser, and so must the report."""
    reporter = module.PyTestReporter
    marks = {
        "test_pass": "ok",
        "test_fail": "F",
        "test_exception": "E",
        "test_skip": "s",
        "test_xfail": "f",
        "test_xpass": "X",
    }

    def flush(self: Any, suffix: str = "") -> None:
        pending = self.__dict__.pop("_taskpack_line", None)
        if pending is not None:
            line(pending + suffix)

    def hook(name: str, before: Any) -> None:
        method = getattr(reporter, name)

        def hooked(self: Any, *args: Any, **kwargs: Any) -> Any:
            before(self, *args)
            return method(self, *args, **kwargs)

        setattr(reporter, name, hooked)

    def entering_test(self: Any, f: Any) -> None:
        flush(self)
        self._taskpack_line = f.__name__

    def mark(word: str) -> Any:
        def marked(self: Any, *args: Any) -> None:
            if "_taskpack_line" in self.__dict__:
                self._taskpack_line += " " + word

        return marked

    def finish(self: Any) -> None:
        flush(self)
        end()

    hook("start", lambda self, *args: _claimed())
    hook("entering_test", entering_test)
    hook("leaving_filename", lambda self: flush(self, " [OK]"))
    hook("finish", finish)
    for name, word in marks.items():
        hook(name, mark(word))


class _SympyFinder(importlib.abc.MetaPathFinder):
    """Hooks SymPy's reporter the moment its module loads (`sympy.testing` or, before SymPy
    1.6, `sympy.utilities`)."""

    NAMES = ("sympy.testing.runtests", "sympy.utilities.runtests")

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.NAMES:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: Any) -> None:
            execute(module)
            _sympy_reporter(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Called by the sitecustomize.py beside this file in every Python the tests start."""
    settings = _settings()
    if settings is None:
        return
    runner = settings[0]
    if runner == "pytest":
        plugins = [p for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p]
        os.environ["PYTEST_PLUGINS"] = ",".join([*plugins, PLUGIN])
    elif runner == "django":
        _unittest()
    elif runner == "sympy":
        sys.meta_path.insert(0, _SympyFinder())
    _next_sitecustomize()


def _next_sitecustomize() -> None:
    """The image's own sitecustomize, which ours shadows on sys.path, still runs."""
    ours = sys.modules.pop("sitecustomize", None)
    path = sys.path[:]
    sys.path[:] = [p for p in path if os.path.abspath(p or ".") != HERE]
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        if ours is not None:
            sys.modules["sitecustomize"] = ours
    finally:
        sys.path[:] = path
