"""The sandbox `taskpack check` runs tasks in: an attempt (a candidate solution, then one or
its verifier over what it left in /app) inside its own user namespace, whoever starts it.

Why a user namespace of our own rather than bubblewrap alone: run as root, bubblewrap keeps the
caller's powers, so a task could remount the host's /usr read-write. Here this file runs as a
separate process that leaves the host's user namespace before anything of the task exists:
- uids 0-65535 inside are host uids from `BASE_UID` on when started by root (one uid, the
  caller's, otherwise), so "root" in a task owns no host file and can write none, whatever it
  mounts;
- every phase runs in bubblewrap with new pid, ipc, net and uts namespaces, a new session (no
  TIOCSTI into the caller's terminal), no standard input, and only the capabilities a Docker
  container has by default (no CAP_SYS_ADMIN: no mounts);
- everything a task can write (/app, /tmp, /dev/shm, /root, the phase's /solution or /tests)
  lives on one tmpfs, and /logs on a small one of its own (so a task that fills its disk can
  still leave a reward): `disk` bytes in all;
- the attempt's processes together are held to `memory` bytes (tmpfs pages they write count
  too) and `processes` processes by a cgroup of their own, when the host lets us make one (as
  root, cgroup v1 or v2); otherwise `memory` bounds each process's address space (RLIMIT_AS).
  prlimit bounds file size, the process count per uid (RLIMIT_NPROC) and core dumps;
- phases are bounded in time; a phase's processes die with it (its pid namespace ends);
- the solution phase never sees /tests: the verifier's files are written after it ends, and
  /logs is emptied between the phases;
- rewards are read without following links, as regular files of at most `MAX_REWARD` bytes,
  and phase output is kept only as its last `MAX_LOG` bytes.

The host side is `run(job)`; the same file, run as a script, is the process inside. It uses the
standard library alone and imports nothing of taskpack: it runs with `python -I`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
from typing import Any

# Host uid of uid 0 inside, when started by root: far above the ranges /etc/subuid hands out
# (100000 and up), so no host user or rootless container owns a file as one of these uids.
BASE_UID = 0x70000000
UIDS = 65536
MAX_REWARD = 64 << 10
MAX_LOG = 16 << 10
LOGS_SIZE = 64 << 20  # /logs is a tmpfs of its own, this size at most (an eighth of `disk`)
MAX_REPORT = 1 << 20  # bytes of the report the inside hands back
# Docker's default capabilities: what a task's scripts may expect root to have.
CAPS = [
    *("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID"),
    *("CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_NET_RAW", "CAP_SYS_CHROOT"),
    *("CAP_MKNOD", "CAP_AUDIT_WRITE", "CAP_SETFCAP"),
]
WORK = "/tmp/attempt"  # on a tmpfs mounted over /tmp, in our mount namespace only
_CLONE_NEWUSER, _CLONE_NEWNS = 0x10000000, 0x00020000
_MS_REC, _MS_PRIVATE = 0x4000, 0x40000


class SandboxError(Exception):
    """The sandbox could not be set up; the message says why."""


Files = list[list[Any]]  # [path, base64 bytes, mode], as the job carries them


def files(tree: dict[str, tuple[bytes, int]]) -> Files:
    """A {path: (bytes, mode)} tree as a job carries it."""
    return [[p, base64.b64encode(data).decode("ascii"), mode] for p, (data, mode) in tree.items()]


# --- the host side -------------------------------------------------------------------------


def _write_maps(pid: int) -> None:
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0:
        maps = {"uid_map": f"0 {BASE_UID} {UIDS}\n", "gid_map": f"0 {BASE_UID} {UIDS}\n"}
    else:
        with open(f"/proc/{pid}/setgroups", "w") as f:
            f.write("deny")
        maps = {"uid_map": f"0 {uid} 1\n", "gid_map": f"0 {gid} 1\n"}
    for name, text in maps.items():
        with open(f"/proc/{pid}/{name}", "w") as f:
            f.write(text)


class Cgroup:
    """A cgroup holding one attempt's processes together to `memory` bytes and `processes`
    processes: v2 (one hierarchy) or v1 (the memory and pids ones), made below the cgroups this
    process is in. `made` is False where the host allows none (not root, no delegation)."""

    ROOT = "/sys/fs/cgroup"

    def __init__(self, memory: int, processes: int) -> None:
        import secrets

        self.name = f"taskpack-{os.getpid()}-{secrets.token_hex(4)}"
        self.paths: list[str] = []
        try:
            self._make(memory, processes)
        except OSError:
            self.close()
        self.made = bool(self.paths)

    def _own(self) -> dict[str, str]:
        """Hierarchy (controllers, or "" for v2) -> this process's cgroup in it."""
        own = {}
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for c in controllers.split(",") if controllers else [""]:
                    own[c] = path
        return own

    def _make(self, memory: int, processes: int) -> None:
        own = self._own()
        if os.path.exists(os.path.join(self.ROOT, "cgroup.controllers")):  # v2 only
            made = self._mkdir(os.path.join(self.ROOT, own[""].lstrip("/")))
            self._write(made, "memory.max", memory)
            self._write(made, "memory.swap.max", 0)
            self._write(made, "pids.max", processes)
            return
        if "memory" not in own or "pids" not in own:
            return
        memory_dir = self._mkdir(os.path.join(self.ROOT, "memory", own["memory"].lstrip("/")))
        self._write(memory_dir, "memory.limit_in_bytes", memory)
        if os.path.exists(os.path.join(memory_dir, "memory.memsw.limit_in_bytes")):
            self._write(memory_dir, "memory.memsw.limit_in_bytes", memory)  # no swap beyond
        pids_dir = self._mkdir(os.path.join(self.ROOT, "pids", own["pids"].lstrip("/")))
        self._write(pids_dir, "pids.max", processes)

    def _mkdir(self, parent: str) -> str:
        path = os.path.join(parent, self.name)
        os.mkdir(path)
        self.paths.append(path)
        return path

    @staticmethod
    def _write(folder: str, name: str, value: int) -> None:
        with open(os.path.join(folder, name), "w") as f:
            f.write(str(value))

    def add(self, pid: int) -> None:
        for path in self.paths:
            self._write(path, "cgroup.procs", pid)

    def close(self) -> None:
        """Every process still in it killed, then the cgroup removed."""
        for path in reversed(self.paths):
            for _ in range(100):
                try:
                    with open(os.path.join(path, "cgroup.procs")) as f:
                        pids = [int(p) for p in f.read().split()]
                except OSError:
                    break
                for pid in pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.rmdir(path)
                    break
                import time

                time.sleep(0.01)
        self.paths = []


def run(job: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run one attempt (see `main` for the job's keys) and return what the inside reports.
    `timeout` bounds the whole attempt, as a last resort beside each phase's own bound."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxError("bubblewrap is not installed (apt-get install bubblewrap)")
    group = Cgroup(job["memory"], job["processes"])
    try:
        report = _run({**job, "bwrap": bwrap, "together": group.made}, timeout, group)
    finally:
        group.close()
    return report


def memory_scope() -> str:
    """What `memory` bounds on this machine: an attempt's processes together, or each one."""
    probe = Cgroup(1 << 30, 16)
    probe.close()
    return "together (a cgroup per attempt)" if probe.made else "per process (no cgroup here)"


def _run(job: dict[str, Any], timeout: float, group: Cgroup) -> dict[str, Any]:
    with subprocess.Popen(
        [sys.executable, "-I", "-S", os.path.abspath(__file__)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as inside:
        assert inside.stdin is not None and inside.stdout is not None
        try:
            if inside.stdout.readline() != b"ready\n":
                _, err = inside.communicate(timeout=10)
                raise SandboxError(_last_line(err) or "the sandbox did not start")
            _write_maps(inside.pid)
            if group.made:  # before the job goes in: every process of the attempt is in it
                group.add(inside.pid)
                # at the bound, the kernel kills the task's processes, never the one that
                # reports (each phase sets its own score back: `_watch`)
                with (
                    contextlib.suppress(OSError),
                    open(f"/proc/{inside.pid}/oom_score_adj", "w") as f,
                ):
                    f.write("-1000")
            inside.stdin.write(json.dumps(job).encode())  # read whole before anything runs
            inside.stdin.close()
            out, err = _bounded(inside, timeout)
        except (subprocess.TimeoutExpired, SandboxError) as e:
            os.killpg(inside.pid, signal.SIGKILL)
            if isinstance(e, SandboxError):
                raise
            raise SandboxError(f"the attempt took more than {timeout:g} s") from None
        except OSError as e:
            raise SandboxError(f"no user namespace for the sandbox ({e})") from None
    if inside.returncode != 0 or not out:
        raise SandboxError(_last_line(err) or f"the sandbox ended with {inside.returncode}")
    result: dict[str, Any] = json.loads(out)
    return result


def _bounded(inside: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes]:
    """The inside's report (at most MAX_REPORT bytes) and the end of what it printed as
    errors: neither can make this process hold more than that, whatever an attempt prints."""
    import selectors
    import time

    assert inside.stdout is not None and inside.stderr is not None
    out, err = b"", b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as streams:
        streams.register(inside.stdout, selectors.EVENT_READ)
        streams.register(inside.stderr, selectors.EVENT_READ)
        while streams.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(inside.args, timeout)
            for key, _ in streams.select(left):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    streams.unregister(key.fileobj)
                elif key.fileobj is inside.stdout:
                    out += chunk
                    if len(out) > MAX_REPORT:
                        raise SandboxError(f"the sandbox said more than {MAX_REPORT} bytes")
                else:
                    err = (err + chunk)[-MAX_LOG:]
    inside.wait(timeout=max(1.0, deadline - time.monotonic()))
    return out, err


def _last_line(err: bytes) -> str:
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else ""


# --- the inside ----------------------------------------------------------------------------


def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _enter(libc: Any) -> None:
    """Leave the host's user and mount namespaces; wait for the host to map our uids."""
    import ctypes

    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the host process
    libc.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: what a phase leaves is ours to reap
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS) != 0:
        raise SandboxError(f"unshare: {os.strerror(ctypes.get_errno())}")
    sys.stdout.buffer.write(b"ready\n")
    sys.stdout.flush()


def logs_size(disk: int) -> int:
    """Bytes of the attempt's `disk` that /logs has, a tmpfs of its own."""
    return min(LOGS_SIZE, disk // 8)


def _become_root(libc: Any, disk: int) -> None:
    import ctypes

    os.setresgid(0, 0, 0)
    with contextlib.suppress(PermissionError):  # started by a user: no groups to drop
        os.setgroups([])
    os.setresuid(0, 0, 0)
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        raise SandboxError(f"mount: {os.strerror(ctypes.get_errno())}")
    # One tmpfs for everything an attempt writes but its logs; the host's /tmp is untouched.
    _mount_tmpfs(os.path.dirname(WORK), disk - logs_size(disk))
    os.makedirs(WORK)


def _lay(root: str, tree: Files) -> None:
    for path, data, mode in tree:
        if os.path.isabs(path) or ".." in path.split("/"):
            raise SandboxError(f"a file path outside its folder: {path!r}")
        target = os.path.join(root, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(base64.b64decode(data))
        os.chmod(target, mode & 0o7777)


def _mount_tmpfs(path: str, size: int) -> None:
    import ctypes

    libc = _libc()
    if libc.mount(b"tmpfs", path.encode(), b"tmpfs", 0, f"size={size},mode=0755".encode()):
        raise SandboxError(f"mount tmpfs: {os.strerror(ctypes.get_errno())}")


def _logs(path: str, size: int) -> None:
    """A fresh /logs of its own size: a task that fills its disk can still leave a reward."""
    if os.path.ismount(path):
        _libc().umount2(path.encode(), 2)  # MNT_DETACH
    _fresh(path)
    _mount_tmpfs(path, size)
    for sub in ("verifier", "agent"):
        os.makedirs(os.path.join(path, sub))


def _fresh(path: str, *subfolders: str) -> None:
    if os.path.lexists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    os.makedirs(path)
    for sub in subfolders:
        os.makedirs(os.path.join(path, sub))


def _limits(job: dict[str, Any]) -> None:
    """prlimit for every process of the attempt (inherited through bubblewrap)."""
    bounds = [
        (resource.RLIMIT_FSIZE, job["disk"]),
        (resource.RLIMIT_NPROC, job["processes"]),
        (resource.RLIMIT_CORE, 0),
    ]
    if not job.get("together"):  # no cgroup holds them together: each process is bounded
        bounds.append((resource.RLIMIT_AS, job["memory"]))
    for kind, value in bounds:
        resource.setrlimit(kind, (value, value))


def _phase(job: dict[str, Any], binds: list[str], script: str) -> dict[str, Any]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", "TEST_DIR": "/tests"}
    env.update(job["env"])
    args = [
        job["bwrap"],
        "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent", "--new-session",
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/bin", "/bin",
        "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/sbin", "/sbin",
        "--proc", "/proc",
        "--dev", "/dev",
        *binds,
        "--chdir", job["workdir"],
        "--clearenv",
        *[x for k, v in env.items() for x in ("--setenv", k, v)],
        "--cap-drop", "ALL",
        *[x for cap in CAPS for x in ("--cap-add", cap)],
        "--", "bash", script,
    ]  # fmt: skip
    return _watch(args, job["timeout"])


def _watch(args: list[str], timeout: float) -> dict[str, Any]:
    """Run a phase, keeping only the last MAX_LOG bytes of what it prints (from a pipe: its
    output takes neither disk nor memory), and stop it after `timeout` seconds."""
    import select
    import time

    done = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=_killable,
    )
    assert done.stdout is not None
    tail, timed_out = b"", False
    deadline = time.monotonic() + timeout
    with done:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                done.kill()
                timed_out = True
                break
            if select.select([done.stdout], [], [], left)[0]:
                chunk = os.read(done.stdout.fileno(), 1 << 16)
                if not chunk:
                    break
                tail = (tail + chunk)[-MAX_LOG:]
        status = done.wait()
    _reap()
    log = tail.decode("utf-8", "replace")
    return {"status": None if timed_out else status, "timed_out": timed_out, "log": log}


def _killable() -> None:
    """A phase's processes are the ones the kernel kills first at the memory bound."""
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as f:
        f.write("0")


def _reap() -> None:
    """Wait for every process a phase left: bubblewrap's, killed with its pid namespace."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _read_reward(logs: str) -> dict[str, Any]:
    """The verifier's reward files as text, read without following any link."""
    out: dict[str, Any] = {}
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        top = os.open(logs, flags | os.O_DIRECTORY)
    except OSError as e:
        return {"error": f"/logs is not a folder ({e.strerror})"}
    try:
        try:
            folder = os.open("verifier", flags | os.O_DIRECTORY, dir_fd=top)
        except OSError as e:
            return {"error": f"/logs/verifier is not a folder ({e.strerror})"}
        try:
            for name in ("reward.txt", "reward.json"):
                try:
                    fd = os.open(name, flags, dir_fd=folder)
                except FileNotFoundError:
                    continue
                except OSError as e:
                    out["error"] = f"{name}: not a plain file ({e.strerror})"
                    continue
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    os.close(fd)
                    out["error"] = f"{name}: not a plain file"
                    continue
                with os.fdopen(fd, "rb") as f:
                    data = f.read(MAX_REWARD + 1)
                if len(data) > MAX_REWARD:
                    out["error"] = f"{name}: larger than {MAX_REWARD} bytes"
                    continue
                out[name] = data.decode("utf-8", "replace")
        finally:
            os.close(folder)
    finally:
        os.close(top)
    return out


def attempt(job: dict[str, Any]) -> dict[str, Any]:
    """The job: `app` (the files /app starts with), `candidate` (the files of /solution, whose
    solve.sh runs first; null for no solution), `tests` (the verifier's files, laid out only
    after the solution phase; null to run none), `workdir`, `env`, and the bounds `timeout`
    (s per phase), `disk`, `memory` (bytes), `processes`."""
    _fresh(f"{WORK}/app")
    _lay(f"{WORK}/app", job["app"])
    report: dict[str, Any] = {}
    if job.get("candidate") is not None:
        report["solution"] = _stage(job, "solution", "--ro-bind", "solve.sh")
    if job.get("tests") is not None:
        report["verifier"] = _stage(job, "tests", "--bind", "test.sh")
        report["verifier"]["reward"] = _read_reward(f"{WORK}/logs")
    return report


def _stage(job: dict[str, Any], name: str, bind: str, script: str) -> dict[str, Any]:
    """One phase: the job's files for /`name` laid out (the candidate's for /solution, the
    verifier's for /tests) and bound with `bind` beside /app and a fresh /logs; then
    /`name`/`script` runs."""
    _fresh(f"{WORK}/{name}")
    _lay(f"{WORK}/{name}", job["candidate" if name == "solution" else name])
    _logs(f"{WORK}/logs", logs_size(job["disk"]))
    binds = ["--bind", f"{WORK}/app", "/app", bind, f"{WORK}/{name}", f"/{name}"]
    binds += ["--bind", f"{WORK}/logs", "/logs"]
    for scratch, mode in (("tmp", 0o1777), ("dev/shm", 0o1777), ("root", 0o700)):
        folder = f"{WORK}/scratch/{scratch}"  # fresh each phase, on the attempt's one tmpfs
        _fresh(folder)
        os.chmod(folder, mode)
        binds += ["--bind", folder, f"/{scratch}"]
    return _phase(job, binds, f"/{name}/{script}")


def main() -> int:
    try:
        libc = _libc()
        _enter(libc)
        job = json.loads(sys.stdin.buffer.read())
        _become_root(libc, job["disk"])
        _limits(job)
        report = attempt(job)
    except (SandboxError, OSError) as e:
        print(f"sandbox: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
