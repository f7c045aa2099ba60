"""YAML from task folders and option files, loaded safely and with its expansion bounded.

Aliases let a few hundred bytes stand for billions of values; PyYAML shares the repeated
objects, so loading is cheap, but anything that walks the result (validation, JSON) would hang.
So the document's expanded size is counted on the node graph before any value is built, and a
document that would expand past TASKPACK_MAX_YAML_NODES (1,000,000 by default) is refused.
"""

from __future__ import annotations

from typing import Any

import yaml

from taskpack.base.nesting import check_depth
from taskpack.base.settings import number
from taskpack.converters._sources.records import RowError


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = 1  # a cycle counts once; PyYAML refuses recursive objects anyway
    total = 1
    if isinstance(node, yaml.SequenceNode):
        total += sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        total += sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    sizes[id(node)] = total
    return total


def load_yaml(text: str, name: str) -> Any:
    try:
        check_depth(text)  # flow collections; block nesting ends in RecursionError below
    except ValueError as e:
        raise RowError(f"{name}: {e}") from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        most = number("TASKPACK_MAX_YAML_NODES", 1_000_000, "a number of nodes")
        if _expanded_size(node, {}) > most:
            raise RowError(f"{name}: YAML that expands to over {most} values (aliases); refused")
        return loader.construct_document(node)
    except yaml.YAMLError as e:
        raise RowError(f"{name}: not valid YAML ({e})") from None
    except RecursionError:
        raise RowError(f"{name}: YAML nested too deeply") from None
    finally:
        loader.dispose()
