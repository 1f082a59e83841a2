"""PII and language ID at their limits, against values worked out by hand: phone numbers of 9, 10, 15 and 16
digits, octets of 255 and 256, private addresses kept, each stand-in's turn, and the kinds `--pii` names; a
language score equal to the threshold (dropped: a kept document's score must exceed it) and just above it, with a
stand-in model whose scores the test sets, and the threshold's own limits."""

from __future__ import annotations

import pytest

from helpers.clean.steps.language import LanguageId, check_languages
from helpers.clean.steps.pii import EMAIL_STAND_INS, IP_STAND_INS, PHONE_STAND_INS, PiiMask, pii_kinds
from helpers.common.errors import UserError


def masked(text: str, **kinds) -> tuple[str, dict]:
    notes = {}
    return PiiMask(**kinds).format(text, notes), notes


@pytest.mark.parametrize("number, phone", [
    ("+32 12 345 67", False),  # 9 digits: too few for a phone number
    ("+32 12 345 678", True),  # 10
    ("+49 123 4567 8901 23", True),  # 15: E.164's most
    ("+49 123 4567 8901 234", False),  # 16
    ("+32768000", False),  # no separator: a figure
    ("(212) 555-1234", True), ("212-555-1234", True), ("212.555.1234", True), ("+1 212 555 1234", True),
    ("(112) 555-1234", False),  # an area code starts with 2 to 9
    ("212-155-1234", False),  # so does an exchange
    ("212-555.1234", False),  # the separators agree
    ("v212-555-1234", False), ("212-555-1234-5", False), ("212-555-12345", False),  # run on from or into
])
def test_a_phone_number_is_masked_only_within_its_rule_s_limits(number, phone):
    text, notes = masked(f"call {number} today", emails=False, ips=False)
    assert (text == f"call {PHONE_STAND_INS[0]} today") is phone
    assert notes == ({"phones": 1} if phone else {})


@pytest.mark.parametrize("address, public", [
    ("8.8.8.8", True), ("255.255.255.255", False), ("9.255.255.255", True), ("127.0.0.1", False),
    ("10.0.0.1", False), ("192.168.1.1", False), ("172.16.0.1", False), ("172.32.0.1", True)])
def test_an_ip_address_is_masked_when_python_calls_it_global(address, public):
    text, notes = masked(f"host {address} up", emails=False, phones=False)
    assert text == (f"host {IP_STAND_INS[0]} up" if public else f"host {address} up")
    assert masked(f"host {address} up", emails=False, phones=False, public_ips_only=False)[0] == \
        f"host {IP_STAND_INS[0]} up"


def test_an_octet_over_255_ends_the_address_before_it():
    assert masked("at 8.8.8.256 now", emails=False, phones=False)[0] == f"at {IP_STAND_INS[0]}6 now"


def test_stand_ins_are_taken_in_turn_from_the_first_in_each_document():
    text = "a@b.org c@d.org e@f.org 1.1.1.1 2.2.2.2 3.3.3.3 4.4.4.4 5.5.5.5 6.6.6.6 7.7.7.7"
    out, notes = masked(text, phones=False)
    assert out.split() == [*EMAIL_STAND_INS, EMAIL_STAND_INS[0], *IP_STAND_INS, IP_STAND_INS[0]]
    assert notes == {"emails": 3, "ips": 7}
    assert masked("x@y.io", phones=False)[0] == EMAIL_STAND_INS[0]  # the next document starts again
    assert masked("(212) 555-1234, (213) 555-1234, (214) 555-1234", emails=False, ips=False)[0] == \
        f"{PHONE_STAND_INS[0]}, {PHONE_STAND_INS[1]}, {PHONE_STAND_INS[0]}"


@pytest.mark.parametrize("chosen, kinds", [(True, ("email", "ip", "phone")), (None, ()), (False, ()),
                                           ("ip,email", ("email", "ip")), (["phone"], ("phone",)),
                                           (" email , ip ", ("email", "ip"))])
def test_pii_names_its_kinds_in_the_order_they_are_replaced(chosen, kinds):
    assert pii_kinds(chosen) == kinds


@pytest.mark.parametrize("chosen, line", [
    ("email,phones", "--pii email,phones: no kind 'phones'; fix: name some of email,ip,phone (email,ip is what "
                     "datatrove's PIIFormatter masks), or pass --pii alone for all three"),
    (",", "--pii ',': names no kind; fix: name some of email,ip,phone, e.g. --pii email,ip"),
    ("ip,ip", "--pii ip,ip: name each kind once; fix: e.g. --pii email,ip")])
def test_pii_refuses_a_kind_it_does_not_know_in_one_line(chosen, line):
    with pytest.raises(UserError) as refused:
        pii_kinds(chosen)
    assert str(refused.value) == line


def judged(monkeypatch, scores: dict, languages=None, threshold=0.65):
    """`LanguageId.judge` with fastText's scores replaced by `scores`."""
    monkeypatch.setattr(LanguageId, "scores", lambda self, text: scores)
    return LanguageId(languages, threshold).judge("any text")


def test_a_language_score_equal_to_the_threshold_is_dropped_and_one_above_it_kept(monkeypatch):
    reason, labels = judged(monkeypatch, {"en": 0.65, "de": 0.35})
    assert reason == "language_score: en 0.650 <= 0.65" and labels == {"language": "en", "language_score": 0.65}
    assert judged(monkeypatch, {"en": 0.6500001, "de": 0.35})[0] is None
    assert judged(monkeypatch, {"en": 0.65, "de": 0.35}, ("en",))[0] == "language_score: en 0.650 <= 0.65"
    assert judged(monkeypatch, {"en": 0.66, "de": 0.34}, ("en",))[0] is None
    assert judged(monkeypatch, {"en": 0.3, "fr": 0.2}, threshold=0.0)[0] is None


def test_a_listed_language_above_the_threshold_keeps_a_document_whose_most_likely_language_is_another(monkeypatch):
    assert judged(monkeypatch, {"en": 0.70, "de": 0.66}, ("de",)) == (None, {"language": "en",
                                                                              "language_score": 0.70})
    assert judged(monkeypatch, {"en": 0.70, "de": 0.65}, ("de", "fr"))[0] == "language: en 0.700, not de,fr"


@pytest.mark.parametrize("languages, threshold, line", [
    ("", 0.65, "--languages: no language named; fix: codes such as en,de,fr,zh (ISO 639-1), or 'any'"),
    ("any,en", 0.65, "--languages any,en: 'any' keeps every language; fix: name either 'any' or the languages to "
                     "keep"),
    ("en,xx,yy", 0.65, "--languages en,xx,yy: xx, yy not among the 176 languages of lid.176; fix: codes such as "
                       "en,de,fr,zh (ISO 639-1), or 'any'"),
    ("en", 1.0, "--language-threshold 1.0: a score is a probability; fix: a number from 0 to below 1, e.g. 0.65"),
    ("en", -0.01, "--language-threshold -0.01: a score is a probability; fix: a number from 0 to below 1, e.g. "
                  "0.65")])
def test_bad_language_settings_are_refused_in_one_line(languages, threshold, line):
    with pytest.raises(UserError) as refused:
        check_languages(languages, threshold)
    assert str(refused.value) == line


def test_language_codes_are_read_case_blind_and_any_means_every_language():
    assert check_languages(" EN, De ", 0.0) == (("en", "de"), 0.0)
    assert check_languages("any", 0.999) == (None, 0.999)
    assert check_languages(["zh", "yue"], 0.5) == (("zh", "yue"), 0.5)


def test_each_kind_of_pii_is_masked_only_when_named():
    text = "a@b.org 8.8.8.8 (212) 555-1234"
    assert PiiMask.of(("ip",)).format(text, {}) == f"a@b.org {IP_STAND_INS[0]} (212) 555-1234"
    assert PiiMask.of(("email",)).format(text, {}) == f"{EMAIL_STAND_INS[0]} 8.8.8.8 (212) 555-1234"
    assert PiiMask.of(("phone",)).format(text, {}) == f"a@b.org 8.8.8.8 {PHONE_STAND_INS[0]}"


def test_an_address_python_does_not_read_is_kept_even_when_every_address_goes():
    assert masked("host 010.1.2.3 up", emails=False, phones=False, public_ips_only=False)[0] == "host 010.1.2.3 up"


def test_language_id_asks_every_language_s_score_and_builds_with_its_threshold():
    pytest.importorskip("fasttext", reason="the language extra is not installed (pip install -e '.[language]')")
    scores = LanguageId().scores("Der schnelle braune Fuchs springt über den faulen Hund, und die Katze schläft.")
    assert len(scores) > 10 and max(scores, key=scores.get) == "de" and 0.99 < sum(scores.values()) <= 1.0001
    step, = LanguageId.build({"languages": ("en",), "language_threshold": 0.3})
    assert (step.languages, step.threshold) == (("en",), 0.3)


def test_the_settings_a_report_shows_are_plain_lists_under_their_own_names():
    assert PiiMask.shown({"pii": ("email", "ip")}) == {"pii": ["email", "ip"]}
    shown = LanguageId.shown({"languages": ("en", "fr"), "language_threshold": 0.65})
    assert shown == {"languages": ["en", "fr"], "language_threshold": 0.65}


def test_the_language_settings_read_say_any_in_lower_case_and_none_as_nothing():
    assert LanguageId.read({"languages": "ANY", "language_threshold": 0.5}) == {"languages": ("any",),
                                                                                "language_threshold": 0.5}
    assert LanguageId.read({"languages": None, "language_threshold": 0.65}) == {"languages": (),
                                                                                 "language_threshold": 0.65}
