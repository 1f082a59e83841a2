"""The tokenizer explorer's figure, and the costs it and notebook 01 are built on."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from helpers.tokenizers.costs import hub_style_tokenizer, llama_parameter_split, raw_pieces, token_pieces
from helpers.tokenizers.zoo import load_tokenizer
from helpers.workshop.explore import tokenizers as explore_tokenizers
from helpers.workshop.explore.tokenizers import (BYTE_COLOUR, CODE_POINT_COLOUR, draw_pieces, explore_pieces, shown,
                                                  undrawn_characters)

TEXT = "Hello world: def f():\n    return 1  # 日本 🤖"


@pytest.mark.parametrize("name", ["mistral", "llama3"])
def test_draw_pieces_has_one_box_per_token_and_says_what_it_shows(name):
    tokenizer = load_tokenizer(name)
    fig = draw_pieces(tokenizer, TEXT)
    ax = fig.axes[0]
    tokens = len(tokenizer.encode(TEXT))
    assert ax.get_title().startswith(f"{name}: {tokens} tokens for {len(TEXT.encode())} bytes")
    assert "as stored in the vocabulary" in ax.get_xlabel()
    assert len(ax.texts) == len(ax.patches) == tokens
    plt.close(fig)


def test_draw_pieces_changes_with_the_text():
    tokenizer = load_tokenizer("llama3")
    short, long = draw_pieces(tokenizer, "Hello"), draw_pieces(tokenizer, "Hello world, and more words")
    assert len(short.axes[0].texts) == 1 < len(long.axes[0].texts)
    assert short.get_figheight() <= long.get_figheight()
    plt.close("all")


def test_shown_makes_whitespace_visible_and_names_characters_no_font_draws_by_code_point(monkeypatch):
    assert shown(" a\n") == "·a⏎"
    monkeypatch.setattr(explore_tokenizers, "font_for", lambda c: None if ord(c) > 0x2FFF else "DejaVu Sans Mono")
    assert shown("·日本") == "·«U+65E5»«U+672C»"
    assert undrawn_characters(["a", "·日", "<0xE6>"]) == {"U+65E5": "日"}
    monkeypatch.setattr(explore_tokenizers, "font_for", lambda c: "a CJK font")
    assert shown("日") == "日" and undrawn_characters(["日"]) == {}


def test_fonts_that_draw_boxes_or_follow_tex_encoding_are_never_picked():
    fonts = explore_tokenizers._installed_glyphs()
    assert next(iter(fonts)) == "DejaVu Sans Mono"
    assert not [name for name in fonts if name.startswith(explore_tokenizers.NOT_UNICODE)]
    assert explore_tokenizers.font_for("a") == "DejaVu Sans Mono"


def test_byte_tokens_and_undrawable_characters_are_told_apart_in_the_figure():
    fig = draw_pieces(load_tokenizer("mistral"), "日本 🤖")
    ax = fig.axes[0]
    colours = {t.get_text(): t.get_color() for t in ax.texts}
    assert colours["<0xF0>"] == BYTE_COLOUR  # 🤖 is not in Mistral's vocabulary: four byte tokens
    undrawn = [label for label in colours if "«U+" in label]
    if explore_tokenizers.font_for("日"):  # a font with the glyph is installed: the character itself
        assert colours["日"] == "black" and not undrawn
    else:
        assert colours["«U+65E5»"] == CODE_POINT_COLOUR != BYTE_COLOUR
    assert "red <0x..>" in ax.get_xlabel() and "blue «U+....»" in ax.get_xlabel()
    plt.close(fig)


def test_explorer_headless_names_its_knobs(capsys, monkeypatch):
    monkeypatch.setenv("HELPERS_HEADLESS", "1")
    explore_pieces({"llama3": load_tokenizer("llama3")}, "Hello", "llama3")
    out = capsys.readouterr().out
    assert "tokenizer" in out and "text" in out and len(out.strip().splitlines()) == 1


def test_sentencepiece_raw_pieces_keep_the_space_that_decoding_one_id_drops():
    mistral = load_tokenizer("mistral")
    assert raw_pieces(mistral, "Hello world") == ["▁Hello", "▁world"]
    assert token_pieces(mistral, "Hello world") == ["Hello", "world"]


def test_byte_level_raw_pieces_show_whole_characters_as_text_and_parts_as_bytes():
    assert "".join(raw_pieces(load_tokenizer("llama3"), "plain words 日本")) == "plain words 日本"
    assert raw_pieces(load_tokenizer("bytes"), "a日") == ["a", "<0xE6>", "<0x97>", "<0xA5>"]


def test_parameter_formula_equals_the_model_transformers_builds():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    for shape in [dict(vocab_size=1000, hidden_size=64, num_layers=2, intermediate_size=172, num_heads=4),
                  dict(vocab_size=777, hidden_size=128, num_layers=3, intermediate_size=256, num_heads=8,
                       num_kv_heads=2)]:
        config = LlamaConfig(vocab_size=shape["vocab_size"], hidden_size=shape["hidden_size"],
                             num_hidden_layers=shape["num_layers"], intermediate_size=shape["intermediate_size"],
                             num_attention_heads=shape["num_heads"],
                             num_key_value_heads=shape.get("num_kv_heads", shape["num_heads"]),
                             tie_word_embeddings=False)
        with torch.device("meta"):
            model = LlamaForCausalLM(config)
        split = llama_parameter_split(**shape)
        assert split["total"] == sum(p.numel() for p in model.parameters())
        assert split["vocabulary"] == 2 * model.model.embed_tokens.weight.numel()


def test_llama3_8b_has_its_published_parameter_count():
    split = llama_parameter_split(128_256, 4096, 32, 14336, 32, num_kv_heads=8)
    assert split["total"] == 8_030_261_248


def test_hub_style_llama3_counts_specials_outside_vocab_size():
    hub = hub_style_tokenizer(load_tokenizer("llama3"))
    assert (hub.vocab_size, len(hub)) == (128_000, 128_256)
    assert hub("Hello world", add_special_tokens=False).input_ids == [9906, 1917]
