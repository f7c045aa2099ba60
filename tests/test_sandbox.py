"""`taskpack check` gives a task no power over the host, whoever runs it (root here, as in CI).

Each hostile task's verifier tries one thing and writes reward 1 only if it worked; every one
must score 0 and leave the host as it was. Bad rewards and Dockerfiles fail their task with
one line, never the run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from taskpack.cli import main
from taskpack.rewards.trials import Bounds, check_task

from .conftest import harbor_folder

pytestmark = pytest.mark.slow  # bubblewrap sandboxes

WON = "echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt"
LOST = "echo 0 > /logs/verifier/reward.txt"


def task(root: Path, name: str, test: str, solve: str = "true", **kw: str) -> Path:
    """A Harbor task folder whose verifier runs `test` (bash) after the solution `solve`."""
    script = f"#!/bin/bash\nmkdir -p /logs/verifier\n{test}\n"
    return harbor_folder(root, name, script, f"#!/bin/bash\n{solve}\n", **kw)


def scores_nothing(folder: Path, limits: Bounds | None = None) -> None:
    result = check_task(folder, limits or Bounds(timeout=30), adversarial=False)
    assert (result.oracle, result.null) == (0.0, 0.0), result


ESCAPES = {
    "remount /usr read-write": "mount -o remount,rw /usr 2>/dev/null; "
    "touch /usr/taskpack-escaped && " + WON,
    "remount in a user namespace of its own": "unshare -Urm sh -c 'mount -o remount,rw /usr "
    "&& touch /usr/taskpack-escaped' 2>/dev/null && " + WON,
    "write the host's folders": "touch /usr/local/taskpack-escaped /usr/bin/taskpack-escaped "
    "2>/dev/null && " + WON,
    "mount anything": "mount -t tmpfs none /mnt 2>/dev/null && " + WON,
    "reach the network": "python3 -c \"import socket; socket.create_connection(('127.0.0.1', "
    '22), 2)" 2>/dev/null && ' + WON,
    "see the host's processes": "[ $(ls /proc | grep -c '^[0-9]') -gt 20 ] && " + WON,
    "TIOCSTI into a terminal": 'python3 -c "import fcntl, os, termios\n'
    "for fd in (0, 1, 2):\n    try:\n        fcntl.ioctl(fd, termios.TIOCSTI, b'x'); "
    "raise SystemExit(0)\n    except OSError:\n        pass\n"
    "fd = os.open('/dev/tty', os.O_RDWR)\nfcntl.ioctl(fd, termios.TIOCSTI, b'x')\" "
    "2>/dev/null && " + WON,
    "become host root": 'python3 -c "import os; os.setuid(0); '
    "open('/usr/taskpack-escaped', 'w')\" 2>/dev/null && " + WON,
}


@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_a_task_cannot_reach_the_host(tmp_path: Path, case: str) -> None:
    scores_nothing(task(tmp_path, "t", ESCAPES[case]))
    assert not list(Path("/usr").glob("taskpack-escaped")), "a task wrote into the host's /usr"
    assert not list(Path("/usr/local").glob("taskpack-escaped"))


def test_the_sandbox_holds_as_root() -> None:
    """What the tests above prove is proven as root, the case bubblewrap alone gets wrong."""
    assert os.geteuid() == 0, "run the sandbox tests as root, as CI does"


def test_a_host_file_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "canary"
    secret.write_text("taskpack-canary-7f3a\n")
    secret.chmod(0o644)
    reader = f"grep -q taskpack-canary {secret} 2>/dev/null && {WON}"
    scores_nothing(task(tmp_path / "a", "read-by-path", reader))
    linked = task(tmp_path / "b", "linked", LOST)
    (linked / "tests" / "data.txt").symlink_to(secret)
    result = check_task(linked, Bounds(timeout=30), adversarial=False)
    assert result.status == "failed" and "is a link" in result.reason
    assert "taskpack-canary" not in result.reason
    # A reward that is a link to a host file: refused, never read.
    leak = task(tmp_path / "c", "reward-link", f"ln -s {secret} /logs/verifier/reward.txt")
    result = check_task(leak, Bounds(timeout=30), adversarial=False)
    assert result.status == "failed" and "not a plain file" in result.reason
    assert "taskpack-canary" not in result.reason


def test_processes_memory_disk_and_output_are_bounded(tmp_path: Path) -> None:
    free = shutil.disk_usage("/tmp").free
    limits = Bounds(timeout=30, disk=32 << 20, memory=512 << 20, processes=64)
    fork = (
        f"for i in $(seq 300); do sleep {MARK} & done 2>/dev/null\n"
        f"[ $(ls /proc | grep -c '^[0-9]') -gt 200 ] && {WON}"
    )
    scores_nothing(task(tmp_path, "fork", fork), limits)
    fill = (
        "for f in /app/fill /tmp/fill /dev/shm/fill /root/fill; do "
        "dd if=/dev/zero of=$f bs=1M count=100 2>/dev/null; done\n"
        f"[ $(cat /app/fill /tmp/fill | wc -c) -gt $((64 << 20)) ] && {WON}"
    )
    scores_nothing(task(tmp_path, "disk", fill), limits)
    memory = f"python3 -c 'x = bytearray(2 << 30)' 2>/dev/null && {WON}"
    scores_nothing(task(tmp_path, "memory", memory), limits)
    flood = task(tmp_path, "output", f"head -c 4G /dev/zero; yes taskpack | head -c 1G >&2; {LOST}")
    checker, sandbox = _peak_rss_of_a_check(flood, limits)
    assert checker < 400 << 20, checker  # taskpack held none of the 5 GiB of output
    assert sandbox < limits.memory, sandbox  # nor did the sandbox (its processes' peak)
    assert shutil.disk_usage("/tmp").free > free - (256 << 20)  # the host's disk was not filled
    assert _running(MARK) == []  # no process of the sandbox outlived its attempt


def test_disk_and_memory_bound_the_attempt_in_all(tmp_path: Path) -> None:
    """`disk` is all an attempt can write, across /app, /tmp, /dev/shm and /root (each was a
    tmpfs of `disk` bytes of its own); `memory` holds its processes together (each had
    `memory` bytes of address space of its own)."""
    limits = Bounds(timeout=60, disk=64 << 20, memory=512 << 20, processes=64)
    fill = (
        "for f in /app/fill /tmp/fill /dev/shm/fill /root/fill; do "
        "dd if=/dev/zero of=$f bs=1M count=40 2>/dev/null; done\n"
        "total=$(cat /app/fill /tmp/fill /dev/shm/fill /root/fill | wc -c)\n"
        f"[ $total -gt $((64 << 20)) ] && {WON}"
    )
    scores_nothing(task(tmp_path, "disk-in-all", fill), limits)
    hold = (
        "for i in 1 2 3 4; do python3 -c \"import time; x = b'x' * (200 << 20); "
        f"time.sleep(4); open('/tmp/held-$i', 'w')\" 2>/dev/null & done; wait\n"
        f"[ $(ls /tmp/held-* 2>/dev/null | wc -l) -eq 4 ] && {WON}"
    )
    scores_nothing(task(tmp_path, "memory-together", hold), limits)
    honest = task(tmp_path, "within", LOST.replace("echo 0", "echo 1"), "true")
    result = check_task(honest, limits, adversarial=False)
    assert result.oracle == 1.0, result  # the bounds leave a task that keeps within them be


def _peak_rss_of_a_check(folder: Path, limits: Bounds) -> tuple[int, int]:
    """Bytes: the largest resident size of the process that checks `folder`, and of any process
    it waited for (the sandbox's), measured in a fresh process so that no earlier test's child
    counts."""
    code = (
        "import resource, sys\nfrom pathlib import Path\n"
        "from taskpack.rewards.trials import Bounds, check_task\n"
        f"r = check_task(Path({str(folder)!r}), Bounds(**{vars(limits)!r}), adversarial=False)\n"
        "assert (r.oracle, r.null) == (0.0, 0.0), r\n"
        # VmHWM, not RUSAGE_SELF: Linux carries ru_maxrss across exec, so it would count the
        # test runner this process was forked from.
        "hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0]\n"
        "print(int(hwm.split()[1]) * 1024)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    checker, sandbox = map(int, done.stdout.split()[-2:])
    return checker, sandbox


MARK = "19.7301"  # how long the fork bomb's processes sleep: a mark to find them by


def _running(mark: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and mark.encode() in (proc / "cmdline").read_bytes():
                found.append(proc.name)
        except OSError:
            pass
    return found


def test_a_task_that_runs_forever_is_stopped(tmp_path: Path) -> None:
    result = check_task(task(tmp_path, "t", "sleep 600"), Bounds(timeout=2), adversarial=False)
    assert result.status == "failed" and "timed out after 2 s" in result.reason


BAD = {
    "reward.json null": ("echo null > /logs/verifier/reward.json", "is not a number"),
    "reward.json a list": ("echo '[1]' > /logs/verifier/reward.json", "is not a number"),
    "reward.json of text": (
        'echo \'{"reward": "1"}\' > /logs/verifier/reward.json',
        "is not a number",
    ),
    "reward.json empty object": ("echo '{}' > /logs/verifier/reward.json", "empty object"),
    "reward.json not JSON": ("echo '{' > /logs/verifier/reward.json", "not JSON"),
    "reward.json NaN": ("echo NaN > /logs/verifier/reward.json", "not a finite number"),
    "reward.txt not a number": ("echo yes > /logs/verifier/reward.txt", "not a number"),
    "reward.txt huge": ("head -c 1M /dev/zero > /logs/verifier/reward.txt", "larger than"),
    "reward.txt a folder": ("mkdir /logs/verifier/reward.txt", "not a plain file"),
    "reward.txt a fifo": ("mkfifo /logs/verifier/reward.txt", "not a plain file"),
    "no reward": ("true", "wrote no reward"),
    "logs a link": ("rm -rf /logs/verifier; ln -s /tmp /logs/verifier", "not a folder"),
}
DOCKERFILES = {
    "COPY without arguments": ("FROM python:3.12-slim\nWORKDIR /app\nCOPY\n", "without arguments"),
    "FROM without arguments": ("FROM\nWORKDIR /app\n", "without arguments"),
    "an unclosed quote": ('FROM python:3.12\nWORKDIR /app\nCOPY "a /app/\n', "closing quotation"),
    "COPY with no destination": ("FROM python:3.12\nWORKDIR /app\nCOPY a\n", "no destination"),
}


def test_bad_rewards_and_dockerfiles_fail_their_task_with_one_line(tmp_path: Path) -> None:
    root = tmp_path / "export"
    for name, (test, _) in BAD.items():
        task(root, name.replace(" ", "-"), test)
    for name, (dockerfile, _) in DOCKERFILES.items():
        task(root, name.replace(" ", "-"), LOST, dockerfile=dockerfile)
    out = CliRunner().invoke(main, ["check", str(root), "--no-adversarial", "-q", "-j", "2"])
    assert out.exit_code == 1 and "Traceback" not in out.output, out.output
    failed = [line for line in out.output.splitlines() if line.startswith("failed: ")]
    assert len(failed) == len(BAD) + len(DOCKERFILES)
    for name, (_, says) in {**BAD, **DOCKERFILES}.items():
        [line] = [x for x in failed if x.startswith(f"failed: {name.replace(' ', '-')}:")]
        assert says in line, line
