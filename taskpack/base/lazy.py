"""A package's public names imported on first use (PEP 562): `__getattr__ = lazy(__name__,
{name: module below the package})`, so importing the package costs only what it uses."""

from __future__ import annotations

import sys
from importlib import import_module

# Not `typing.TYPE_CHECKING`: `import taskpack` (an environment's fresh process) imports neither
# typing nor collections.abc for this.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's `__getattr__`: a name of `names` imported from its module, then kept."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{names[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
