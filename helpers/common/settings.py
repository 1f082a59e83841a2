"""Settings objects (frozen dataclasses) that a function takes whole or as keywords, with one rule for a keyword
that names none of their fields: refused as Python refuses an unknown keyword of the function."""

from __future__ import annotations

from dataclasses import fields, replace


def refuse_unknown(keywords, settings_type, caller: str, read_here: tuple[str, ...] = ()) -> None:
    """A keyword among `keywords` that is no field of `settings_type`, or one `caller` finds out itself
    (`read_here`), refused as Python refuses it in `caller`."""
    known = {field.name for field in fields(settings_type)} - set(read_here)
    for name in keywords:
        if name not in known:
            raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}")


def with_keywords(settings, keywords: dict, caller: str):
    """`settings` with `keywords` in place of its fields (each checked by `refuse_unknown`)."""
    refuse_unknown(keywords, type(settings), caller)
    return replace(settings, **keywords) if keywords else settings
