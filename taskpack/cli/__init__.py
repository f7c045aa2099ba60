"""The `taskpack` command: thin click commands over the library, in modules by what they do
(inspect, convert, check, registry, serve, curate), each imported only when one of its commands
runs (click's lazy-group pattern): `taskpack info` loads neither the server nor the curation
steps.

Exit codes: 0 success, 1 invalid input or failed operation (one-line message, no traceback),
2 usage error (click's own).
"""

from __future__ import annotations

import importlib
from typing import Any

import click

# command -> "module:function" in this package
COMMANDS = {
    "annotate": "curate:annotate",
    "catalog": "convert:catalog",
    "check": "check:check",
    "convert": "convert:convert",
    "decontaminate": "curate:decontaminate",
    "dedup": "curate:dedup",
    "diff": "inspect:diff",
    "example": "convert:example",
    "export": "convert:export_cmd",
    "filter": "curate:filter_command",
    "formats": "convert:formats",
    "grade": "check:grade",
    "info": "inspect:info",
    "lineage": "curate:lineage",
    "lock": "registry:lock",
    "ls": "inspect:ls",
    "merge": "convert:merge",
    "mix": "curate:mix",
    "publish": "registry:publish",
    "pull": "registry:pull",
    "serve": "serve:serve",
    "show": "inspect:show",
    "validate": "inspect:validate",
}


class LazyGroup(click.Group):
    """A group whose commands are imported from their module when first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return super().get_command(ctx, name)
        module, attr = COMMANDS[name].split(":")
        command: Any = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
        return command if isinstance(command, click.Command) else None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="taskpack")
def main() -> None:
    """Package, convert and serve task datasets for RL of language models."""
