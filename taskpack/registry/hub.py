"""The Hugging Face Hub as a registry: one dataset repo per task set, a version per git tag.

`hf://owner` keeps task set NAME in the dataset repo `owner/NAME`. Publishing commits the
task-set folder (manifest, split Parquet files, large files, and a dataset card whose `configs`
let `datasets.load_dataset("owner/NAME", revision=VERSION, split=...)` work without taskpack)
as one commit on `main`, with the previous head as `parent_commit` (compare-and-swap), then tags
that exact commit with the version. The tag is create-only: a racing publisher gets 409, and
the manifest behind the tag decides whether it was the same content.

The Hub has no compare-and-swap on tags, and tags can be deleted and re-created, so movable tags
(`latest`, user tags) live in `tags.json` on the branch `taskpack-tags`, changed by commits with
`parent_commit`; and every download is checked against the manifest's hashes, the truth.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskpack.base.nesting import parse_json
from taskpack.base.objects import MANIFEST, Progress, Sink, require_bytes
from taskpack.errors import TaskpackError, require
from taskpack.model import Manifest
from taskpack.registry.base import Registry
from taskpack.registry.location import Location
from taskpack.registry.refs import is_release, is_version, version_key
from taskpack.registry.store import PAGE_BYTES, READ_BYTES, bounded, network_timeout

if TYPE_CHECKING:
    from taskpack.storage.taskset import TaskSet  # annotations only: no Parquet code imported here

TAGS_BRANCH = "taskpack-tags"
OLDER_BRANCH = "taskpack-older"  # commits of versions below the highest release
TAGS_FILE = "tags.json"
CARD = "README.md"
_CAS_ATTEMPTS = 20
_ATTEMPTS = 4  # tries of each read before it fails
_HUB_LICENSES = {"mit", "apache-2.0", "cc0-1.0", "cc-by-4.0", "cc-by-sa-4.0", "bsd-3-clause"}


class _HttpStatus(Exception):
    def __init__(self, status: int) -> None:
        self.status = status


def _transient(err: BaseException) -> bool:
    """Worth another try: the server is busy or failing (429, 5xx), or the connection broke."""
    if isinstance(err, _HttpStatus):
        return err.status == 429 or err.status >= 500
    import httpx

    return isinstance(err, (httpx.TransportError, OSError))


def _retrying() -> Any:
    from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

    return Retrying(
        stop=stop_after_attempt(_ATTEMPTS),
        wait=wait_random_exponential(multiplier=0.5, max=8),
        retry=retry_if_exception(_transient),
        reraise=True,
    )


def _status(err: Exception) -> int | None:
    response = getattr(err, "response", None)
    return getattr(response, "status_code", None)


def _bound_hub_timeouts() -> None:
    """huggingface_hub's HTTP client waits forever (timeout None) in its API calls. Give every
    call taskpack's network timeout unless it sets one: in huggingface_hub 1.x by wrapping the
    installed client factory (the default, or the program's own), in 0.x by a requests session
    that defaults the timeout."""
    import huggingface_hub

    if not hasattr(huggingface_hub, "set_client_factory"):  # huggingface_hub 0.x
        _bound_requests_timeouts()
        return
    from huggingface_hub.utils import _http

    current = getattr(_http, "_GLOBAL_CLIENT_FACTORY", None) or _http.default_client_factory
    if getattr(current, "taskpack_bounded", False):
        return

    def bounded() -> Any:
        client = current()
        if getattr(client.timeout, "read", 0) is None:
            client.timeout = network_timeout()
        return client

    bounded.taskpack_bounded = True  # type: ignore[attr-defined]
    huggingface_hub.set_client_factory(bounded)
    huggingface_hub.close_session()  # a client made before this has no timeout


def _bound_requests_timeouts() -> None:
    import huggingface_hub
    import requests  # huggingface_hub 0.x's own HTTP library

    class BoundedSession(requests.Session):
        def request(self, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("timeout") is None:
                kwargs["timeout"] = network_timeout()
            return super().request(*args, **kwargs)

    configure = huggingface_hub.configure_http_backend
    configure(backend_factory=BoundedSession)


class HubRegistry(Registry):
    def __init__(self, where: Location) -> None:
        for module in ("huggingface_hub", "httpx", "tenacity"):
            require(module, "hub")
        from huggingface_hub import HfApi

        self.location = where
        self.owner = where.owner
        # Read now, not at huggingface_hub's import: HF_ENDPOINT names a mirror or test Hub.
        self.endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
        self.api = HfApi(endpoint=self.endpoint)
        _bound_hub_timeouts()

    def _repo(self, name: str) -> str:
        return f"{self.owner}/{name}"

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Any failure of the block as one TaskpackError naming `what` (never the server's
        words)."""
        try:
            yield
        except TaskpackError:
            raise
        except Exception as e:  # noqa: BLE001 - network and API errors of any client
            raise self._fail(e, what) from None

    def _fail(self, err: Exception, what: str) -> TaskpackError:
        status = _status(err)
        if status in (401, 403):
            return TaskpackError(f"registry {self.url}: not authorized to {what} (HTTP {status})")
        # Never the server's words: an error body can echo request headers, and with them a token.
        detail = f"HTTP {status}" if status else type(err).__name__
        return TaskpackError(f"registry {self.url}: could not {what} ({detail})")

    # --- reads ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _stream(self, name: str, path: str, revision: str) -> Iterator[Any]:
        """A streamed GET of one file of the repo at `revision` (the Hub's resolve URL), with
        httpx (the same with huggingface_hub 0.x and 1.x)."""
        import httpx
        from huggingface_hub import hf_hub_url
        from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]  # documented, lazily exported

        url = hf_hub_url(
            self._repo(name), path, repo_type="dataset", revision=revision, endpoint=self.endpoint
        )
        with httpx.stream(
            "GET", url, headers=build_hf_headers(), follow_redirects=True, timeout=network_timeout()
        ) as response:
            yield response

    def _download(
        self, name: str, path: str, revision: str, out: Sink, progress: Progress | None = None
    ) -> bool:
        """Stream one file into `out` (rewound on each attempt); False when it is absent.
        Network failures, 429 and 5xx are retried with backoff, a bounded number of times."""

        def fetch(tick: Callable[[int], None]) -> bool:
            for attempt in _retrying():
                with attempt, self._stream(name, path, revision) as response:
                    status = response.status_code
                    if status == 404:
                        return False
                    if status >= 400:
                        raise _HttpStatus(status)
                    out.seek(0)
                    out.truncate()
                    for chunk in response.iter_bytes(READ_BYTES):
                        out.write(chunk)
                        tick(len(chunk))
                        if progress:
                            progress(len(chunk))
            return True

        try:
            return bounded(f"registry {self.url}: reading {name}/{path}", fetch)
        except TaskpackError:
            raise
        except _HttpStatus as e:
            raise TaskpackError(
                f"registry {self.url}: reading {name}/{path}: HTTP {e.status}"
            ) from None
        except Exception as e:  # noqa: BLE001 - network errors of any client
            raise self._fail(e, f"read {name}/{path}") from None

    def _get(self, name: str, path: str, revision: str) -> bytes | None:
        buffer = io.BytesIO()
        return buffer.getvalue() if self._download(name, path, revision, buffer) else None

    def _refs(self, name: str) -> Any:
        from huggingface_hub.errors import RepositoryNotFoundError

        try:
            return bounded(
                f"registry {self.url}: list the versions of {name}",
                lambda tick: self.api.list_repo_refs(self._repo(name), repo_type="dataset"),
            )
        except TaskpackError:
            raise
        except RepositoryNotFoundError:
            return None
        except Exception as e:  # noqa: BLE001
            if _status(e) == 404:  # mirrors answer a missing repo with a plain 404
                return None
            raise self._fail(e, f"list the versions of {name}") from None

    def names(self) -> list[str]:
        # The Hub's dataset listing, page by page (`Link: rel="next"`), with a timeout:
        # huggingface_hub's own pagination waits forever on a silent server.
        import httpx
        from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

        # Only the owner's task sets: their cards carry the `taskpack` tag.
        first = f"{self.endpoint}/api/datasets?author={self.owner}&filter=taskpack"
        found: list[str] = []

        def pages(tick: Callable[[int], None]) -> None:
            url: str | None = first
            while url:
                if not _same_origin(url, self.endpoint):  # the token goes nowhere else
                    raise TaskpackError(
                        f"registry {self.url}: the listing's next page is on another host; refused"
                    )
                response = httpx.get(url, headers=build_hf_headers(), timeout=network_timeout())
                tick(PAGE_BYTES)
                if response.status_code >= 400:
                    status = response.status_code
                    raise TaskpackError(
                        f"registry {self.url}: could not list task sets (HTTP {status})"
                    )
                found.extend(d["id"].split("/", 1)[1] for d in response.json())
                url = response.links.get("next", {}).get("url")

        try:
            bounded(f"registry {self.url}: list task sets", pages)
        except TaskpackError:
            raise
        except Exception as e:  # noqa: BLE001 - network errors of any client
            raise self._fail(e, "list task sets") from None
        return sorted(found)

    def versions(self, name: str) -> list[str]:
        refs = self._refs(name)
        tags = [t.name for t in refs.tags] if refs is not None else []
        return sorted((t for t in tags if is_version(t)), key=version_key)

    def read_manifest(self, name: str, version: str) -> bytes | None:
        # A version exists when its tag does; asking for a file of a missing repo gets 401.
        if version not in self.versions(name):
            return None
        return self._get(name, MANIFEST, version)

    def _tags_head(self, name: str) -> tuple[str | None, dict[str, str]]:
        refs = self._refs(name)
        head = next((b.target_commit for b in refs.branches if b.name == TAGS_BRANCH), None)
        if head is None:
            return None, {}
        # Ask before reading: a branch just created has no tags.json yet, and some mirrors
        # answer a missing file with an error rather than 404.
        with self._errors(f"read the tags of {name}"):
            present = self.api.get_paths_info(
                self._repo(name), [TAGS_FILE], revision=head, repo_type="dataset"
            )
        if not present:
            return head, {}
        data = self._get(name, TAGS_FILE, head)
        try:
            stored = parse_json(data) if data else {}
        except ValueError:
            stored = {}
        if not isinstance(stored, dict):
            stored = {}
        # Only tags naming a version count; a stray or hostile entry is passed over.
        tags = {k: v for k, v in stored.items() if isinstance(v, str) and is_version(v)}
        return head, tags

    def tags(self, name: str) -> dict[str, str]:
        return self._tags_head(name)[1]

    # --- writes -----------------------------------------------------------------------

    def set_tag(self, name: str, tag: str, version: str, *, only_if_newer: bool = False) -> None:
        from huggingface_hub import CommitOperationAdd

        for _ in range(_CAS_ATTEMPTS):
            head, tags = self._tags_head(name)
            old = tags.get(tag)
            if old == version or (
                old is not None and only_if_newer and version_key(old) > version_key(version)
            ):
                return
            if head is None:
                with self._errors(f"create the tags branch of {name}"):
                    self.api.create_branch(
                        self._repo(name), branch=TAGS_BRANCH, repo_type="dataset", exist_ok=True
                    )
                continue
            tags[tag] = version
            body = json.dumps(tags, indent=2, sort_keys=True).encode()
            try:
                self.api.create_commit(
                    self._repo(name),
                    [CommitOperationAdd(TAGS_FILE, body)],
                    commit_message=f"tag {tag} -> {version}",
                    repo_type="dataset",
                    revision=TAGS_BRANCH,
                    parent_commit=head,
                )
                return
            except Exception as e:  # noqa: BLE001
                if _status(e) != 412:
                    raise self._fail(e, f"move tag {tag}") from None
        raise TaskpackError(f"{self.url}: tag {name}@{tag} kept changing; gave up after retries")

    def publish(
        self,
        ts: TaskSet,
        *,
        tags: tuple[str, ...] = (),
        progress: Progress | None = None,
        ready: Callable[[], None] | None = None,
    ) -> bool:
        m = ts.manifest
        existing = self.manifest(m.name, m.version)
        if existing is not None:
            created = self.check_same(existing, m)
        else:
            try:
                self.api.create_repo(self._repo(m.name), repo_type="dataset", exist_ok=True)
            except Exception as e:  # noqa: BLE001
                raise self._fail(e, f"create the dataset repo {self._repo(m.name)}") from None
            if ready is not None:  # one commit holds objects and manifest: nothing to overlap
                ready()
            commit = self._commit_version(ts)
            created = self._tag_version(ts, commit)
        self.move_tags(m, tags)
        return created

    def _commit_version(self, ts: TaskSet) -> str:
        """One commit whose tree is exactly this version; the commit id. It goes on `main` when
        the version is the highest release, so the repo's page and a plain
        `load_dataset("owner/name")` always show the latest release; an older version or a
        pre-release goes on the branch `taskpack-older` (its tag reaches it just the same)."""
        from huggingface_hub import CommitOperationAdd

        m = ts.manifest
        branch = "main" if self._highest_release(m) else OLDER_BRANCH
        files = {}
        local_files = ts.fetched()
        for sha, path in m.objects().items():
            local = local_files[sha]
            require_bytes(local, sha)  # hashed here, once: the Hub client sends files as they are
            files[path] = str(local)
        adds: list[Any] = [CommitOperationAdd(path, local) for path, local in files.items()]
        adds.append(CommitOperationAdd(MANIFEST, m.model_dump_json(indent=2).encode()))
        adds.append(CommitOperationAdd(CARD, dataset_card(ts, self.owner).encode()))
        with tempfile.TemporaryDirectory(prefix="taskpack-hub-") as tmp:
            views = {
                viewer_path(n): viewer_parquet(ts, n, Path(tmp) / f"{n}.parquet") for n in m.splits
            }
            adds.extend(CommitOperationAdd(path, str(local)) for path, local in views.items())
            return self._commit(m, branch, adds, {*files, *views, MANIFEST, CARD, ".gitattributes"})

    def _commit(self, m: Manifest, branch: str, adds: list[Any], kept: set[str]) -> str:
        """`adds` as one commit on `branch` that also deletes whatever else its head holds but
        `kept`; retried from the new head while the branch moves. The commit id."""
        from huggingface_hub import CommitOperationDelete

        for _ in range(_CAS_ATTEMPTS):
            refs = self._refs(m.name)
            head = next((b.target_commit for b in refs.branches if b.name == branch), None)
            if head is None:  # the first older version: branch off main
                with self._errors(f"create the branch {branch} of {m.name}"):
                    self.api.create_branch(
                        self._repo(m.name), branch=branch, repo_type="dataset", exist_ok=True
                    )
                continue
            with self._errors(f"list the files of {m.name}"):
                present = self.api.list_repo_files(
                    self._repo(m.name), repo_type="dataset", revision=head
                )
            stale = [CommitOperationDelete(path) for path in present if path not in kept]
            try:
                info = self.api.create_commit(
                    self._repo(m.name),
                    [*adds, *stale],
                    commit_message=f"{m.name} {m.version}",
                    commit_description=m.digest,
                    repo_type="dataset",
                    revision=branch,
                    parent_commit=head,
                )
                return str(info.oid)
            except Exception as e:  # noqa: BLE001
                if _status(e) != 412:
                    raise self._fail(e, f"upload {m.name}@{m.version}") from None
        raise TaskpackError(f"{self.url}: {branch} of {m.name} kept moving; gave up after retries")

    def _highest_release(self, m: Manifest) -> bool:
        if not is_release(m.version):
            return False
        mine = version_key(m.version)
        return all(version_key(v) < mine for v in self.versions(m.name) if is_release(v))

    def _tag_version(self, ts: TaskSet, commit: str) -> bool:
        m = ts.manifest
        try:
            self.api.create_tag(
                self._repo(m.name), tag=m.version, revision=commit, repo_type="dataset"
            )
            return True
        except Exception as e:  # noqa: BLE001
            if _status(e) != 409:
                raise self._fail(e, f"tag {m.name}@{m.version}") from None
        winner = self.manifest(m.name, m.version)
        if winner is None:
            raise TaskpackError(f"{self.url}: tag {m.version} exists but has no manifest")
        return self.check_same(winner, m)

    def download(
        self, manifest: Manifest, sha: str, out: Sink, progress: Progress | None = None
    ) -> None:
        path = manifest.objects().get(sha)
        if path is None:
            raise TaskpackError(f"{manifest.ref} has no object {sha}")
        found = self._download(manifest.name, path, manifest.version, out, progress)
        if not found:
            raise TaskpackError(f"registry {self.url}: {manifest.ref}/{path}: missing (HTTP 404)")


_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def _same_origin(url: str, endpoint: str) -> bool:
    """Whether `url` is on the host (scheme, name and port) of `endpoint`; a relative URL is."""
    from urllib.parse import urljoin, urlsplit

    a, b = urlsplit(urljoin(endpoint, url)), urlsplit(endpoint)
    return (a.scheme, a.hostname, a.port) == (b.scheme, b.hostname, b.port)


def _size_category(rows: int) -> str:
    return next((label for limit, label in _SIZES if rows < limit), "1M<n<10M")


def viewer_path(split: str) -> str:
    return f"data/{split}.parquet"


def viewer_parquet(ts: TaskSet, split: str, path: Path) -> Path:
    """The viewer's copy of a split, written to `path`: the same rows with the JSON columns as
    real Arrow types (`metadata.difficulty`, `source.dataset`, `reward.kind`), so the Hub's
    viewer filters by them and a plain `load_dataset` gets structures, not JSON text. Written a
    row group at a time, so a split of millions of tasks is not held in memory. taskpack itself
    reads the content-addressed `splits/` files; this copy is derived and never read back."""
    from taskpack.storage.views import write_typed

    write_typed(ts.split(split), path, compression="zstd")
    return path


def _lineage_section(source: Mapping[str, Any], shown: int = 20) -> str:
    """What the version was made from (`taskpack lineage` shows the whole chain) and, for a
    decontaminated version, its contamination report: the first `shown` hits."""
    from taskpack.base.provenance import entries, step_lines

    text = "\n".join(step_lines(source))
    out = f"## Lineage\n\n```\n{text}\n```\n"
    hits = entries(source, "hits")
    if hits:
        rows = "\n".join(
            f"| {h.get('split')}/{h.get('id')} | {h.get('ref')} | "
            + str(h.get("ngram")).replace("|", "\\|")
            + " |"
            for h in hits[:shown]
        )
        more = f"\n\n{len(hits) - shown} more in the manifest." if len(hits) > shown else ""
        out += (
            f"\n### Contamination report ({len(hits)} hits)\n\n"
            f"| task | reference | shared n-gram |\n| --- | --- | --- |\n{rows}{more}\n"
        )
    return out


def _passrates_section(ts: TaskSet) -> str:
    """Each annotated split's pass-rate histogram, per model and sampling settings."""
    from taskpack.storage import ratings

    blocks = []
    for name in ts.manifest.annotations:
        for (model, key), found in ratings.rates(ts.annotations(name)).items():
            lines = "\n".join(ratings.histogram(found.values(), width=30))
            blocks.append(f"{name}, {model} {key}: {len(found)} tasks\n\n```\n{lines}\n```\n")
    return "## Pass rates\n\n" + "\n".join(blocks) if blocks else ""


def dataset_card(ts: TaskSet, owner: str) -> str:
    """README.md, built with huggingface_hub's card classes: the metadata the Hub indexes
    (license, size and task categories, tags, and `configs` that make a plain
    `datasets.load_dataset` read each split), then what a visitor needs to use the set."""
    from huggingface_hub import DatasetCard, DatasetCardData

    m = ts.manifest
    license_id = (m.license or "").lower()
    rows = sum(s.rows for s in m.splits.values())
    kinds = ts.reward_kinds()
    data = DatasetCardData(
        license=license_id if license_id in _HUB_LICENSES else "other",
        pretty_name=m.name,
        size_categories=_size_category(rows),
        task_categories=["text-generation", "reinforcement-learning"],
        tags=["taskpack", "rl-tasks", *(f"reward-{k}" for k in kinds)],
        configs=[
            {
                "config_name": "default",
                "data_files": [{"split": n, "path": viewer_path(n)} for n in m.splits],
            }
        ],
    )
    first = next(iter(m.splits))
    counts = "\n".join(f"| {n} | {s.rows} | `{s.digest}` |" for n, s in m.splits.items())
    upstream = m.source.get("upstream") if isinstance(m.source, dict) else None
    origin = upstream.get("url") if isinstance(upstream, dict) else m.source.get("format")
    body = f"""
# {m.name} {m.version}

{m.description or f"A taskpack task set of {rows} tasks for RL of language models."}

| split | tasks | digest |
| --- | --- | --- |
{counts}

- License: {m.license or "not given"}; source: {origin or "not given"}
- Reward kinds: {", ".join(kinds)}
- Content digest of this version: `{m.digest}`
- Versions are git tags (`1.2.3`, semantic versioning); `main` holds the highest release.

{_lineage_section(m.source)}{_passrates_section(ts)}
Each row of `data/<split>.parquet` (what the viewer and `datasets` read) is one task: `id`,
`digest`, `solution`, `files` (path, role, mode, size, sha256, bytes when small), and
`prompt`, `answer`, `reward`, `rewards`, `tools`, `steps`, `environment`, `limits`, `source`,
`metadata`, `extras` as nested columns (filter by `metadata.difficulty`, `reward.kind`); a
column whose rows differ in shape is JSON text. `splits/` holds the content-addressed rows
taskpack reads and verifies.

```bash
pip install 'taskpack[hub]'
```

```python
import taskpack
split = taskpack.load("{m.name}@{m.version}", split="{first}", registry="hf://{owner}")
task = split[0]

import datasets  # without taskpack
ds = datasets.load_dataset("{owner}/{m.name}", revision="{m.version}", split="{first}")
```
"""
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n{body}"))
