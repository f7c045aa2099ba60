"""What a format's native row holds beyond what its mapping to the task model gives back.

A reader maps a native row into model fields; `residue(native, rebuilt)` is what the row holds
that writing those fields back (`rebuilt`) does not reproduce: the framework's own keys
(`agent_ref`, `env_class`, sampling settings) and its spellings. It is kept in
`extras.<format>`, and the writer applies it with `apply`, so the row comes back exactly:
`apply(rebuilt, residue(native, rebuilt)) == native` for any JSON values.

A residue mirrors the row's shape, so what only one framework understands reads where that
framework put it (`extras.nemo.agent_ref`, `extras.nemo.responses_create_params.temperature`).
Besides plain keys it uses four markers: `$drop` (keys the row lacks), `$items` (changed list
items by index), `$value` (a replacement where shapes differ) and a leading `$` doubled for a
row key that starts with `$`.
"""

from __future__ import annotations

from typing import Any

DROP, ITEMS, VALUE = "$drop", "$items", "$value"


def same(a: Any, b: Any) -> bool:
    """JSON equality: `1`, `1.0` and `True` are three different values here."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _escape(key: str) -> str:
    return "$" + key if key.startswith("$") else key


def _unescape(key: str) -> str:
    return key[1:] if key.startswith("$$") else key


def residue(native: Any, rebuilt: Any) -> Any:
    """What turns `rebuilt` into `native`; {} when they are the same."""
    if same(native, rebuilt):
        return {}
    if isinstance(native, dict) and isinstance(rebuilt, dict):
        out: dict[str, Any] = {}
        for key, value in native.items():
            if key not in rebuilt:
                out[_escape(key)] = value
            elif not same(value, rebuilt[key]):
                out[_escape(key)] = _nested(value, rebuilt[key])
        dropped = [k for k in rebuilt if k not in native]
        if dropped:
            out[DROP] = dropped
        return out
    if isinstance(native, list) and isinstance(rebuilt, list) and len(native) == len(rebuilt):
        return {
            ITEMS: {
                str(i): _nested(a, b)
                for i, (a, b) in enumerate(zip(native, rebuilt, strict=True))
                if not same(a, b)
            }
        }
    return {VALUE: native}


def _nested(native: Any, rebuilt: Any) -> Any:
    """A changed value inside a residue: a nested residue where shapes allow, else the value
    itself when `apply` cannot mistake it for a residue (not a dict)."""
    if isinstance(native, dict) or isinstance(rebuilt, (dict, list)):
        return residue(native, rebuilt)
    return native


def apply(rebuilt: Any, patch: Any) -> Any:
    """`rebuilt` with `patch` (a residue) applied; neither argument is changed."""
    if not isinstance(patch, dict):
        return patch
    if not patch:  # nothing to change
        return rebuilt
    if VALUE in patch:
        return patch[VALUE]
    if ITEMS in patch and isinstance(rebuilt, list):
        out_list = list(rebuilt)
        for index, item in patch[ITEMS].items():
            out_list[int(index)] = apply(out_list[int(index)], item)
        return out_list
    if not isinstance(rebuilt, dict):
        return {_unescape(k): v for k, v in patch.items()}
    out = {k: v for k, v in rebuilt.items() if k not in patch.get(DROP, ())}
    for key, value in patch.items():
        if key == DROP:
            continue
        name = _unescape(key)
        out[name] = apply(out[name], value) if name in out else value
    return out
