"""A package's public names imported on first use (PEP 562): `__getattr__, __dir__ =
lazy(__name__, {name: module below the package}, __all__)`, so importing the package costs
only what it uses."""

from __future__ import annotations

import sys
from importlib import import_module

# Not `typing.TYPE_CHECKING`: `import taskpack` (an environment's fresh process) imports neither
# typing nor collections.abc for this.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any


def lazy(
    package: str, names: Mapping[str, str], public: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's `__getattr__` (a name of `names` imported from its module, then kept; a
    name that is its module's own is the module) and its `__dir__` (what it holds, and its
    `public` names before they load)."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = import_module(f"{package}.{names[name]}")
        value = module if names[name] == name else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *public})

    return __getattr__, __dir__
