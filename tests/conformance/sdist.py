"""Imported by the checks that run a framework's own tests: its source distribution from the
package index (the tests ship there, not in the wheel), unpacked into a scratch folder."""

import subprocess
import sys
import tarfile
from pathlib import Path


def unpacked(scratch: Path, requirement: str) -> Path:
    """The source tree of `requirement` (`NAME==VERSION`), its sdist downloaded into `scratch`
    (an empty folder) and extracted there."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         requirement, "-d", str(scratch)],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    (archive,) = scratch.glob("*.tar.gz")
    with tarfile.open(archive) as sdist:
        sdist.extractall(scratch, filter="data")
    return scratch / archive.name.removesuffix(".tar.gz")
