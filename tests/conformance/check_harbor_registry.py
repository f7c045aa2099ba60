"""Runs inside the harbor venv (Python 3.12): Harbor's own models read what `export --to
harbor` wrote beside the task folders. `DatasetManifest.from_toml_file` reads each split's
dataset.toml and Harbor's `Packager.compute_content_hash` gives every pinned folder the pinned
digest; `Registry.from_path` reads registry.json and `harbor dataset list --registry-path`
lists it.

    python check_harbor_registry.py EXPORT_DIR [REGISTRY_URL]  ->  JSON on stdout

With REGISTRY_URL (a `taskpack serve`'s /harbor/registry.json), `harbor dataset list
--registry-url` lists it too.
"""

import json
import subprocess
import sys
from pathlib import Path

from harbor.models.dataset.manifest import DatasetManifest
from harbor.models.registry import Registry
from harbor.models.task.config import TaskConfig
from harbor.publisher.packager import Packager

root = Path(sys.argv[1])
result = {"datasets": {}, "registry": {}}
for toml in sorted(root.glob("*/dataset.toml")):
    manifest = DatasetManifest.from_toml_file(toml)
    # as `harbor sync` finds a dataset's local tasks: by the name task.toml gives (else, for a
    # task from elsewhere, by its folder's name)
    folders = {}
    for p in sorted(toml.parent.iterdir()):
        if (p / "task.toml").is_file():
            config = TaskConfig.model_validate_toml((p / "task.toml").read_text())
            folders[config.task.name if config.task else p.name] = p
    mismatched = []
    for ref in manifest.tasks:
        folder = folders.get(ref.name) or folders[ref.short_name]
        digest, _ = Packager.compute_content_hash(folder)
        if f"sha256:{digest}" != ref.digest:
            mismatched.append(ref.name)
    result["datasets"][manifest.dataset.name] = {
        "version": manifest.dataset.version,
        "tasks": len(manifest.tasks),
        "mismatched": mismatched,
        "content_hash": manifest.compute_content_hash(),
    }
registry = Registry.from_path(root / "registry.json")
for spec in registry.datasets:
    missing = [t.name for t in spec.tasks if not (root / t.path / "task.toml").is_file()]
    result["registry"][spec.name] = {
        "version": spec.version,
        "tasks": len(spec.tasks),
        "missing": missing,
    }
harbor = Path(sys.executable).parent / "harbor"


def listed(*where):
    """What `harbor dataset list WHERE --json` lists: (name, version) pairs, else its output."""
    done = subprocess.run(
        [str(harbor), "dataset", "list", *where, "--json"], capture_output=True, text=True
    )
    try:
        return [(d["name"], d.get("version")) for d in json.loads(done.stdout)]
    except ValueError:
        return done.stdout[-2000:] + done.stderr[-2000:]


result["listed"] = listed("--registry-path", str(root / "registry.json"))
if len(sys.argv) > 2:
    result["served"] = listed("--registry-url", sys.argv[2])
print(json.dumps(result))
