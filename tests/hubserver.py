"""A small writable Hub for tests: the Hub's write endpoints over local git repositories, with
every read passed through to olah, the real Hub mirror, serving those same repositories.

No writable Hugging Face Hub server can be installed here, so writes (create repo, preupload,
commit, tag, branch) are implemented by this file with git plumbing, faithfully to the Hub API
as huggingface_hub calls it: NDJSON commits with base64 contents ("regular" upload mode, no LFS
or Xet), `parentCommit` as compare-and-swap on the branch, 409 for an existing tag. Reads
(refs, revisions, file downloads, `datasets.load_dataset`) are olah's own, proxied unchanged.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import subprocess
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .services import Server, find_tool, free_port, wait_http

_REPO = r"/api/datasets/(?P<org>[^/]+)/(?P<name>[^/]+)"


def git(
    repo: Path, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        input=stdin,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "hub",
            "GIT_AUTHOR_EMAIL": "hub@localhost",
            "GIT_COMMITTER_NAME": "hub",
            "GIT_COMMITTER_EMAIL": "hub@localhost",
            **(env or {}),
        },
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode())
    return proc.stdout.decode().strip()


@dataclass
class HubRepos:
    """Bare git repositories laid out as olah's mirrors-path expects: datasets/<org>/<name>."""

    root: Path
    lock = threading.Lock()

    def __post_init__(self) -> None:
        self.uploaded: list[str] = []  # every file path whose content a commit carried

    def path(self, org: str, name: str) -> Path:
        return self.root / "datasets" / org / name

    def create(self, org: str, name: str) -> bool:
        repo = self.path(org, name)
        with self.lock:
            if repo.exists():
                return False
            repo.mkdir(parents=True)
            self._init(repo)
        return True

    def _init(self, repo: Path) -> None:
        git(repo, "init", "--bare", "-q", "-b", "main")
        blob = git(repo, "hash-object", "-w", "--stdin", stdin=b"*.parquet binary\n")
        tree = git(repo, "mktree", stdin=f"100644 blob {blob}\t.gitattributes\n".encode())
        commit = git(repo, "commit-tree", tree, "-m", "initial commit")
        git(repo, "update-ref", "refs/heads/main", commit)

    def resolve(self, repo: Path, rev: str) -> str | None:
        try:
            return git(repo, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}")
        except RuntimeError:
            return None

    def commit(
        self, repo: Path, branch: str, body: bytes, base_url: str
    ) -> tuple[int, dict[str, Any]]:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = next(x["value"] for x in lines if x["key"] == "header")
        with self.lock:
            head = self.resolve(repo, branch)
            if head is None:
                return 404, {"error": f"Revision {branch} not found"}
            parent = header.get("parentCommit")
            if parent and parent != head:
                return 412, {"error": "A commit has happened since. Please refresh and try again."}
            with tempfile.TemporaryDirectory() as tmp:
                env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
                git(repo, "read-tree", head, env=env)
                for item in lines:
                    value = item["value"]
                    if item["key"] == "file":
                        self.uploaded.append(value["path"])
                        data = base64.b64decode(value["content"])
                        blob = git(repo, "hash-object", "-w", "--stdin", stdin=data)
                        git(
                            repo,
                            "update-index",
                            "--add",
                            "--cacheinfo",
                            f"100644,{blob},{value['path']}",
                            env=env,
                        )
                    elif item["key"] in ("deletedFile", "deletedFolder"):
                        git(
                            repo,
                            "rm",
                            "--cached",
                            "-r",
                            "-q",
                            "--ignore-unmatch",
                            value["path"],
                            env={**env, "GIT_DIR": str(repo), "GIT_WORK_TREE": tmp},
                        )
                tree = git(repo, "write-tree", env=env)
            commit = git(
                repo, "commit-tree", tree, "-p", head, "-m", header.get("summary", "commit")
            )
            git(repo, "update-ref", f"refs/heads/{branch}", commit, head)
        url = f"{base_url}/datasets/{repo.parent.name}/{repo.name}/commit/{commit}"
        return 200, {"commitOid": commit, "commitUrl": url, "success": True}


def _range(header: str | None, size: int) -> tuple[int, int] | None:
    """The first and last byte a single-range `Range` header asks of `size` bytes, as the Hub
    serves it (`datasets` streaming reads Parquet footers and row groups by range)."""
    found = re.fullmatch(r"bytes=(\d*)-(\d*)", (header or "").strip())
    if not found or not size or found.group(1) == found.group(2) == "":
        return None
    first, last = found.group(1), found.group(2)
    if first == "":
        return max(size - int(last), 0), size - 1
    if int(first) >= size:
        return None
    return int(first), min(int(last), size - 1) if last else size - 1


class Handler(BaseHTTPRequestHandler):
    repos: HubRepos
    upstream: str  # olah
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        body = self._body()
        if path == "/api/repos/create":
            req = json.loads(body)
            org = req.get("organization") or req["name"].split("/")[0]
            name = req["name"].split("/")[-1]
            created = self.repos.create(org, name)
            status = 200 if created else 409
            url = f"http://{self.headers['Host']}/datasets/{org}/{name}"
            return self._json(status, {"url": url, "name": f"{org}/{name}"})
        if path == "/api/validate-yaml":
            return self._json(200, {"errors": [], "warnings": []})
        m = re.fullmatch(_REPO + r"/(?P<op>preupload|commit|tag|branch)/(?P<rev>.+)", path)
        if m is None:
            return self._proxy(body)  # a read that uses POST, such as paths-info
        repo = self.repos.path(m["org"], m["name"])
        if not repo.exists():
            return self._json(404, {"error": "Repository not found"})
        rev = urllib.parse.unquote(m["rev"])
        if m["op"] == "preupload":
            files = []
            for f in json.loads(body)["files"]:
                try:
                    oid: str | None = git(repo, "rev-parse", "-q", "--verify", f"{rev}:{f['path']}")
                except RuntimeError:
                    oid = None
                files.append(
                    {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": oid}
                )
            return self._json(200, {"files": files})
        if m["op"] == "commit":
            base_url = f"http://{self.headers['Host']}"
            return self._json(*self.repos.commit(repo, rev, body, base_url))
        req = json.loads(body or b"{}")
        with self.repos.lock:
            if m["op"] == "tag":
                target = self.repos.resolve(repo, rev)
                if target is None:
                    return self._json(404, {"error": f"Revision {rev} not found"})
                if self.repos.resolve(repo, f"refs/tags/{req['tag']}"):
                    return self._json(409, {"error": f"Tag {req['tag']} already exists"})
                git(repo, "tag", req["tag"], target)
                return self._json(200, {})
            start = self.repos.resolve(repo, req.get("startingPoint") or "main")
            if self.repos.resolve(repo, f"refs/heads/{rev}"):
                return self._json(409, {"error": f"Branch {rev} already exists"})
            git(repo, "update-ref", f"refs/heads/{rev}", start or "")
            return self._json(200, {})

    def do_DELETE(self) -> None:
        path = self.path.split("?", 1)[0]
        m = re.fullmatch(_REPO + r"/tag/(?P<tag>.+)", path)
        if m is None:
            return self._json(404, {"error": "not found"})
        repo = self.repos.path(m["org"], m["name"])
        try:
            git(repo, "tag", "-d", urllib.parse.unquote(m["tag"]))
        except RuntimeError:
            return self._json(404, {"error": "Tag not found"})
        return self._json(200, {})

    def _proxy(self, body: bytes | None = None) -> None:
        request = urllib.request.Request(self.upstream + self.path, data=body, method=self.command)
        for key in (
            "Range",
            "Accept",
            "Accept-Encoding",
            "If-None-Match",
            "Authorization",
            "Content-Type",
        ):
            if key in self.headers:
                request.add_header(key, self.headers[key])
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            response = opener.open(request, timeout=60)
        except urllib.error.HTTPError as e:
            response = e
        data = response.read()
        status = response.status if hasattr(response, "status") else response.code
        ranged = _range(self.headers.get("Range"), len(data)) if status == 200 else None
        if ranged is not None:  # olah 0.5.4 answers a Range with the whole file; the Hub slices
            first, last = ranged
            status, whole, data = 206, len(data), data[first : last + 1]
        self.send_response(status)
        if ranged is not None:
            self.send_header("Content-Range", f"bytes {first}-{last}/{whole}")
        skip = {"transfer-encoding", "connection", "server", "date"}
        if self.command != "HEAD":  # HEAD keeps the upstream length of the body it did not send
            skip.add("content-length")
        for key, value in response.headers.items():
            if key.lower() not in skip:
                self.send_header(
                    key, value.replace(self.upstream, f"http://{self.headers['Host']}")
                )
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)  # a streaming reader may close once it has its bytes

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/api/datasets":  # olah has no listing: the Hub's own, over the repos
            return self._list(urllib.parse.parse_qs(url.query))
        self._proxy()

    def _list(self, query: dict[str, list[str]]) -> None:
        """`GET /api/datasets?author=ORG[&filter=TAG]`: the ORG's dataset repos, those whose
        card on main carries TAG when a filter is given, as the Hub answers."""
        import yaml

        org = query.get("author", [""])[0]
        wanted = query.get("filter", [None])[0]
        found = []
        for repo in sorted((self.repos.root / "datasets" / org).glob("*")):
            tags: list[str] = []
            try:
                card = git(repo, "show", "main:README.md")
                tags = (yaml.safe_load(card.split("---")[1]) or {}).get("tags") or []
            except (RuntimeError, IndexError, yaml.YAMLError):
                pass
            if wanted is None or wanted in tags:
                found.append({"id": f"{org}/{repo.name}", "tags": tags})
        return self._json(200, found)

    do_HEAD = do_GET


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def start_olah(workdir: Path, mirrors: Path) -> Server:
    port = free_port()
    config = workdir / "olah.toml"
    config.write_text(
        "[basic]\n"
        f'host = "127.0.0.1"\nport = {port}\n'
        f'repos-path = "{workdir / "cache"}"\n'
        f'mirrors-path = ["{mirrors}"]\n'
        f'mirror-netloc = "127.0.0.1:{port}"\n'
        "metadata-cache-ttl = 0\n"
        "[accessibility]\noffline = true\n"
    )
    log = workdir / "olah.log"
    proc = subprocess.Popen(
        [find_tool("olah-cli"), "-c", str(config)],
        cwd=workdir,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    server = Server(f"http://127.0.0.1:{port}", proc, log)
    try:
        wait_http(f"{server.endpoint}/api/datasets/none/none/refs", proc, log, timeout=90)
    except BaseException:
        server.stop()
        raise
    return server


@dataclass
class Hub:
    endpoint: str
    repos: HubRepos
    olah: Server
    httpd: ThreadingHTTPServer

    def stop(self) -> None:
        self.httpd.shutdown()
        self.olah.stop()


def start_hub(workdir: Path) -> Hub:
    mirrors = workdir / "mirrors"
    mirrors.mkdir(parents=True)
    olah = start_olah(workdir, mirrors)
    repos = HubRepos(mirrors)
    handler = type("BoundHandler", (Handler,), {"repos": repos, "upstream": olah.endpoint})
    httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return Hub(f"http://127.0.0.1:{httpd.server_address[1]}", repos, olah, httpd)
