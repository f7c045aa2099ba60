"""The README's and the docs site's commands and examples are the ones that work: the README,
then the site's pages in the order of its navigation (`mkdocs.yml`), run as one page."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import DATA
from .services import free_port

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _pages() -> list[Path]:
    """The site's pages, in the order of its navigation."""
    nav = re.findall(r"^  - [^:]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    return [ROOT / "docs" / name for name in nav]


# What runs top to bottom: the README, then every page of the site.
PAGE = "\n".join([README, *(p.read_text(encoding="utf-8") for p in _pages())])


def test_the_site_builds_strictly_and_every_link_resolves(tmp_path: Path) -> None:
    """`mkdocs build --strict` (a warning is an error), every page in its navigation, and
    each relative link of the README and the pages names a file of the checkout (those out of
    docs/ are the repository's, which the site links as they are)."""
    built = subprocess.run(
        ["mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr
    # no dead link: a link the site does not hold would be a warning, and --strict fails on it
    assert "WARNING" not in built.stderr and "not found" not in built.stderr, built.stderr
    assert "end of life" not in built.stdout + built.stderr
    for carried in ("SECURITY/index.html", "bench/RESULTS/index.html", "schemas/task.schema.json"):
        assert (tmp_path / "site" / carried).is_file(), carried
    for page in _pages():  # one title a page: its H1, never repeated as the H2 under it
        lines = page.read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith("# ") and "#" + lines[0] not in lines[1:4], page.name
    listed = {p.name for p in _pages()}
    assert listed == {p.name for p in (ROOT / "docs").glob("*.md")}, listed
    for page in [ROOT / "README.md", *_pages()]:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (page.parent / target).exists(), f"{page.name}: {target}"
    assert len(README.splitlines()) <= 300


def test_ci_runs_exactly_the_readme_test_command() -> None:
    """The README's second command sets the suite up and runs it; `.ci/run` runs that
    command and no other (its other lines are the shell's own: options, the folder)."""
    first_block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first_block is not None
    test_command = first_block.group(1).strip().splitlines()[1]
    script = (ROOT / test_command.split()[-1]).read_text(encoding="utf-8")
    assert test_command == "bash tests/run.sh" and "python -m pytest" in script
    assert "apt-get install" in script and "pip install --progress-bar off -e '.[test]'" in script
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in ci if line.strip() and not line.startswith("#")]
    assert commands == ["set -euo pipefail", 'cd "$(dirname "$0")/.."', test_command]


# What `print(*values)` prints must be the comment the README shows beside it.
_EXPECT = (
    "def _expect(shown, *values):\n"
    "    printed = ' '.join(str(v) for v in values)\n"
    "    assert printed == shown, f'README says {shown!r}, the code prints {printed!r}'\n"
)


def _checked(block: str) -> str:
    """`print(X)  # OUTPUT` lines made checks that X prints OUTPUT."""
    return re.sub(
        r"^(\s*)print\((.*)\)  # (.*)$",
        lambda m: f"{m.group(1)}_expect({m.group(3)!r}, {m.group(2)})",
        block,
        flags=re.M,
    )


def test_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each Python block runs, and each printed line is the one its comment shows."""
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", PAGE, re.S)
    assert blocks and sum(b.count("print(") for b in blocks) > 10
    for block in blocks:
        exec(compile(_EXPECT + _checked(block), "README.md", "exec"), {})
    assert (tmp_path / "sandbox" / "tests" / "test.py").read_bytes() == b"assert inc(1) == 2\n"
    agentic = tmp_path / "agentic-harbor" / "test" / "fix-add"
    assert (agentic / "environment" / "workspace" / "calc.py").is_file()
    assert (agentic / "tests" / "test.sh").is_file() and (
        agentic / "solution" / "solve.sh"
    ).is_file()
    leaked = [p for p in (agentic / "environment").rglob("*") if p.name in ("test.sh", "solve.sh")]
    assert leaked == []
    assert os.path.isdir(tmp_path / "arith.taskset" / "splits")


def frameworks_in_readme() -> set[str]:
    """The frameworks whose blocks the README tags (```python ors): each runs in its venv."""
    return set(re.findall(r"```\w+ (\w+)\n", PAGE))


def readme_script(
    blocks_dir: Path, ports: dict[str, int], pythons: dict[str, str] | None = None
) -> str:
    """The README as one bash script, block by block in page order: bash blocks as written,
    Python blocks run from files (a block tagged with a framework, ```python ors, by the
    python of that framework's venv, from `pythons`), console blocks (`$ command`, then its
    output) checked against the output they show. Left out: the install and test commands of
    the first block (this test runs inside that installed package, from that test command).
    The README's ports (8000, 8001, ...) become `ports`, free ones."""
    lines = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"]

    def ported(text: str) -> str:
        return re.sub(r"\b800\d\b", lambda m: str(ports[m[0]]), text)

    found = re.findall(r"```(\w*)(?: (\w+))?\n(.*?)```", PAGE, re.S)
    for n, (lang, framework, body) in enumerate(found):
        if lang == "bash":
            commands = body.splitlines()
            if n == 0:
                commands = [commands[0].removeprefix("pip install -e . && ")]
            lines += [ported(c) for c in commands]
        elif lang == "python":  # its printed lines checked against their comments too
            path = blocks_dir / f"block{n}.py"
            path.write_text(_EXPECT + ported(_checked(body)), encoding="utf-8")
            python = (pythons or {})[framework] if framework else "python"
            lines.append(f"{python} {path}")
        elif body.startswith("$ "):
            for command, shown in re.findall(r"^\$ (.*)\n((?:(?!\$ ).*\n)*)", body, re.M):
                expected = shlex.quote(shown.rstrip("\n"))
                lines += [
                    f"out=$({command} 2>&1 || true)",
                    f'[ "$out" = {expected} ] || {{ echo "got: $out"; exit 1; }}',
                ]
    return "\n".join(lines) + "\n"


@pytest.mark.slow
def test_the_whole_readme_runs_top_to_bottom_in_an_empty_folder(
    tmp_path: Path, s3_env: str, hub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a user would: a fresh home, an empty folder beside shared/, every command and block
    in order; the S3 and Hub lines against SeaweedFS and the Hub test server."""
    import boto3

    boto3.client("s3").create_bucket(Bucket="my-bucket")
    (tmp_path / "shared").symlink_to(DATA.parent)
    work, home, blocks = tmp_path / "work", tmp_path / "home", tmp_path / "blocks"
    for folder in (work, home, blocks):
        folder.mkdir()
    script = blocks / "readme.sh"
    from .conformance.frameworks import ensure

    pythons = {name: str(ensure(name)) for name in frameworks_in_readme()}
    ports = {f"800{i}": free_port() for i in range(10)}
    script.write_text(readme_script(blocks, ports, pythons), encoding="utf-8")
    env = {**os.environ, "HOME": str(home)}
    for name in ("TASKPACK_REGISTRY", "TASKPACK_CACHE", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        env.pop(name, None)
    before = _checkout_state()
    run = subprocess.run(
        ["bash", str(script)], cwd=work, env=env, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, f"{run.stdout[-3000:]}\n{run.stderr[-5000:]}"
    assert _checkout_state() == before  # nothing left in the checkout
    out = run.stdout
    assert "164 tasks: 164 ok" in out  # the export it checks works
    assert '"name": "arith"' in out or '"name":"arith"' in out  # the server answered
    assert (home / "taskpack-demo" / "manifest.json").is_file()
    assert (work / "gsm8k.taskset" / "manifest.json").is_file()


def _checkout_state() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_every_command_the_readme_shows_inline_is_one_a_block_runs() -> None:
    """A command a user copies from the README's prose (`taskpack export ...` in a bullet)
    was never run: the whole-page test runs code blocks only, and `taskpack export gsm8k@1
    --to verl` failed as written. Every inline `taskpack ...` of the README that names no
    placeholder (NAME, OUT, ...) now begins a line of some bash block the tests run."""
    lines = [
        line.strip()
        for block in re.findall(r"```bash\n(.*?)```", PAGE, re.S)
        for line in block.splitlines()
    ]
    shown = re.findall(r"`(taskpack [^`]*)`", README)
    assert shown
    for command in shown:
        if re.search(r"\b[A-Z]{2,}\b", command):  # a synopsis, with placeholders
            continue
        assert any(line.startswith(command) for line in lines), command
