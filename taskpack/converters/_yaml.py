"""YAML from task folders, loaded safely and with its size of expansion bounded: aliases can
make a few hundred bytes expand into gigabytes, so a document may use only a few of them."""

from __future__ import annotations

from typing import Any

import yaml

from taskpack.converters._source import RowError

MAX_ALIASES = 100


class _Loader(yaml.SafeLoader):
    aliases_seen = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases_seen += 1
            if self.aliases_seen > MAX_ALIASES:
                raise RowError(
                    f"more than {MAX_ALIASES} YAML aliases (refused: unbounded expansion)"
                )
        return super().compose_node(parent, index)


def load_yaml(text: str, name: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        raise RowError(f"{name}: not valid YAML ({e})") from None
