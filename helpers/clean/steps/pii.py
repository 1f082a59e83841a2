"""`--pii`: e-mail addresses, IP addresses and phone numbers in a text replaced by harmless stand-ins; `--pii
email,ip` masks only those kinds, which is what datatrove's `PIIFormatter()` masks (`--pii` alone: all three).

E-mail and IP addresses are found and replaced as datatrove 0.10.1's `PIIFormatter` does by default: the same
patterns, so the same spans (e-mail addresses first, then IP addresses in what that leaves; an IP address is
replaced only when Python's `ipaddress` calls it global, so `127.0.0.1`, `10.0.0.1` or `192.168.1.1` stay), and
the same stand-ins, taken in turn. datatrove keeps one turn over every document a task reads, so which stand-in
lands where depends on how the input was split among tasks; here the turn starts again with each document, so the
output is the same for any number of parts (a document alone gives datatrove's output exactly).

Phone numbers are datatrove's gap, filled by a narrow rule that prefers missing a number to mangling a version
string or a table of figures (`PHONE_RULE`): an international number written with its `+` and a country code
(which never starts with 0), 10 to 15 digits in all (E.164 allows 15; fewer than 10 are mostly sizes and
offsets), in groups cut by single spaces, dots or hyphens (at least one: `+32768000` is a number, not a phone), an
area code perhaps in brackets; or a North American one written `(NXX) NXX-XXXX`, `NXX-NXX-XXXX` or
`NXX.NXX.XXXX` (area code and exchange starting 2 to 9), perhaps after `1-` or `+1 `. A match that letters,
`-`, `+`, `.` or more digits run on from, or into, is not a phone number (nor is any part of it): a version string,
an extension, a longer figure. Missed on purpose: numbers without their country code outside North America, and
ones written without separators. The stand-ins are in the 555-0100 to 555-0199 range North America keeps for
fiction.
"""

from __future__ import annotations

import ipaddress
import re

from ...common.errors import UserError
from .base import Formatter, Option

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)"
_LOCAL_CHAR = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_ADDRESS_LITERAL = rf"\[(?:{_OCTET}\.){{3}}(?:{_OCTET}|[A-Za-z0-9-]*[A-Za-z0-9]:)]"
EMAIL = re.compile(rf"\b{_LOCAL_CHAR}+(?:\.{_LOCAL_CHAR}+)*@(?:(?:{_LABEL}\.)+{_LABEL}|{_ADDRESS_LITERAL})")
IP = re.compile(rf"(?:{_OCTET}\.){{3}}{_OCTET}")

_SEPARATOR = r"[ .-]"
_AREA = rf"{_SEPARATOR}?(?:\(\d{{1,4}}\)|\d{{1,4}})"
_INTERNATIONAL = rf"\+[1-9]\d{{0,2}}{_AREA}(?:{_SEPARATOR}?\d{{2,4}}){{1,5}}"
_NORTH_AMERICAN = r"(?:\+?1[ .-])?(?:\([2-9]\d{2}\) ?|[2-9]\d{2}(?P<cut>[.-]))[2-9]\d{2}(?(cut)(?P=cut)|-)\d{4}"
PHONE_RULE = re.compile(rf"(?<![\w+.-])(?:{_INTERNATIONAL}|{_NORTH_AMERICAN})(?![\w+-]|[ .]?\d|\.\w)")

EMAIL_STAND_INS = ("email@example.com", "firstname.lastname@example.org")  # datatrove's
IP_STAND_INS = ("22.214.171.124", "126.96.36.199", "188.8.131.52", "184.108.40.206", "220.127.116.11",
                "18.104.22.168")  # datatrove's: addresses that answered no ping when its list was made
PHONE_STAND_INS = ("(201) 555-0100", "(201) 555-0199")


def is_public_ip(text: str) -> bool:
    """Whether `text` is an IP address Python's `ipaddress` calls global (not private, loopback, reserved...)."""
    try:
        return ipaddress.ip_address(text).is_global
    except ValueError:
        return False


def _phone_fits(text: str) -> bool:
    """A North American number as matched; an international one of 10 to 15 digits, cut at least once."""
    if not text.startswith("+"):
        return True
    digits = sum(character.isdigit() for character in text)
    return 10 <= digits <= 15 and any(not character.isdigit() for character in text[1:])


KINDS = ("email", "ip", "phone")  # what `--pii` names, in the order they are replaced
DATATROVE_KINDS = ("email", "ip")  # what datatrove's PIIFormatter() replaces


def pii_kinds(chosen: bool | str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """What `--pii` asks to mask, checked: True (the flag alone) is every kind, False or None none, else the kinds
    named (a comma-separated string, or a list), e.g. "email,ip" (datatrove's set)."""
    if chosen is None or chosen is False or chosen == ():
        return ()
    if chosen is True:
        return KINDS
    names = [name.strip() for name in (chosen.split(",") if isinstance(chosen, str) else chosen) if name.strip()]
    for name in names:
        if name not in KINDS:
            raise UserError(f"--pii {','.join(names)}: no kind '{name}'; fix: name some of {','.join(KINDS)} (email,ip "
                            "is what datatrove's PIIFormatter masks), or pass --pii alone for all three")
    if not names:
        raise UserError(f"--pii {chosen!r}: names no kind; fix: name some of {','.join(KINDS)}, e.g. --pii email,ip")
    if len(set(names)) < len(names):
        raise UserError(f"--pii {','.join(names)}: name each kind once; fix: e.g. --pii email,ip")
    return tuple(kind for kind in KINDS if kind in names)


class PiiMask(Formatter):
    """Replaces e-mail addresses, public IP addresses and phone numbers (each kind can be turned off; with
    `public_ips_only=False` every IP address goes), noting how many of each it replaced."""

    name = "pii"
    runs_last = True
    options = (Option("pii", False, "replace e-mail and public IP addresses (as datatrove's PIIFormatter) and phone "
                                    "numbers; or name the kinds, e.g. --pii email,ip (datatrove's PIIFormatter() set)",
                      cli={"nargs": "?", "const": True, "metavar": "KINDS"}),)

    @classmethod
    def read(cls, values: dict) -> dict:
        return {"pii": pii_kinds(values["pii"])}

    @classmethod
    def build(cls, values: dict) -> list:
        return [cls.of(values["pii"])]

    @classmethod
    def shown(cls, values: dict) -> dict:
        return {"pii": list(values["pii"])}

    def __init__(self, emails: bool = True, ips: bool = True, phones: bool = True, public_ips_only: bool = True):
        self.kinds = []  # (what the notes call it, pattern, stand-ins, test of a match or None)
        if emails:
            self.kinds.append(("emails", EMAIL, EMAIL_STAND_INS, None))
        if ips:
            self.kinds.append(("ips", IP, IP_STAND_INS, is_public_ip if public_ips_only else _is_ip))
        if phones:
            self.kinds.append(("phones", PHONE_RULE, PHONE_STAND_INS, _phone_fits))
        self.counted = tuple(kind for kind, *_ in self.kinds)  # the report counts the kinds replaced

    @classmethod
    def of(cls, kinds: tuple[str, ...]) -> "PiiMask":
        """The mask of the kinds `--pii` names (`pii_kinds`)."""
        return cls(emails="email" in kinds, ips="ip" in kinds, phones="phone" in kinds)

    def format(self, text: str, notes: dict) -> str:
        for kind, pattern, stand_ins, wanted in self.kinds:
            if kind == "emails" and "@" not in text:  # the pattern's cost grows with the square of a long run
                continue
            text, count = _replace(text, pattern, stand_ins, wanted)
            if count:
                notes[kind] = notes.get(kind, 0) + count
        return text


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def _replace(text: str, pattern: re.Pattern, stand_ins: tuple[str, ...], wanted) -> tuple[str, int]:
    """`text` with each match of `pattern` that `wanted` accepts (all, when None) replaced by the next of
    `stand_ins`, from the first; and how many were."""
    turn = 0

    def stand_in(match: re.Match) -> str:
        nonlocal turn
        if wanted is not None and not wanted(match.group(0)):
            return match.group(0)
        turn += 1
        return stand_ins[(turn - 1) % len(stand_ins)]

    return pattern.sub(stand_in, text), turn
