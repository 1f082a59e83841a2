"""Sample JSONL inputs shared by the preprocessing tests (local and Ray engines)."""

from __future__ import annotations

import json


def varied_lines(count: int = 60) -> list[bytes]:
    """Documents of many sizes, with blank lines, empty texts, special-token strings and bad records."""
    lines = []
    for i in range(count):
        if i % 11 == 3:
            lines.append(b"\n")
        elif i % 13 == 5:
            lines.append(b'{"text": "broken"\n')
        elif i % 17 == 7:
            lines.append(b'{"body": "no text field"}\n')
        elif i % 7 == 2:
            lines.append(json.dumps({"text": "", "title": ""}).encode() + b"\n")
        else:
            text = f"document {i}: " + "word " * (i * 37 % 90) + ("<|end_of_text|>" if i % 5 == 0 else "")
            lines.append(json.dumps({"text": text, "title": f"T{i}"}).encode() + b"\n")
    return lines
