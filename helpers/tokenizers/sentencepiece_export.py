"""A Hugging Face tokenizer that gives exactly the ids `sentencepiece` gives, for a Llama-style BPE model.

`transformers`' own conversion of such a model (Mistral v0.1, Llama 2) disagrees with `sentencepiece`
on leading spaces and whitespace runs, for two reasons this builder avoids:

- SentencePiece's BPE merges the adjacent pair whose *merged piece* has the best score. The
  conversion ranks merges by piece id instead, which promotes the whitespace-run pieces ("▁▁",
  "▁▁▁▁", ids 259+) that SentencePiece scores worst and merges last.
- SentencePiece always prepends "▁" to a text (`add_dummy_prefix`), even one that starts with a
  space; the `Metaspace` pre-tokenizer does not prepend in that case.

Recipe: normaliser = prepend "▁", then every space → "▁" (SentencePiece's identity normaliser);
pre-split before each "▁" run (no piece has "▁" after another character, so no merge crosses a
cut; it only lets the BPE cache words); BPE with byte fallback over the model's own pieces, merges
ranked by the merged piece's score; whitespace runs merged last, in the left-to-right order that
SentencePiece's tie-break produces; no BOS or EOS added.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

SPACE = "\u2581"  # "▁", SentencePiece's visible space


def _check_supported(model_file: Path) -> None:
    """Refuse models whose normaliser or training spec this recipe does not reproduce."""
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(model_file.read_bytes())
    spec, trainer = model.normalizer_spec, model.trainer_spec
    supported = (
        trainer.model_type == sentencepiece_model_pb2.TrainerSpec.BPE and trainer.byte_fallback
        and not trainer.treat_whitespace_as_suffix and spec.name == "identity"
        and not spec.precompiled_charsmap and spec.add_dummy_prefix and spec.escape_whitespaces
        and not spec.remove_extra_whitespaces
    )
    if not supported:
        raise ValueError(f"{model_file}: only Llama-style SentencePiece BPE models (identity normaliser, "
                         "dummy prefix, byte fallback) can be exported exactly")


def _whitespace_run_merges(run_lengths: set[int]) -> list[tuple[int, int]]:
    """Merges of "▁" runs in the order SentencePiece's leftmost tie-break applies them.

    All run pieces share one score, so SentencePiece merges the leftmost mergeable pair first:
    a run grows from its left end. Ranking merges with a longer left part first makes a
    rank-ordered BPE do the same.
    """
    used: set[tuple[int, int]] = set()
    for n in range(2, 4 * max(run_lengths) + 2):
        symbols = [1] * n
        merged = True
        while merged:
            merged = False
            for i in range(len(symbols) - 1):
                if symbols[i] + symbols[i + 1] in run_lengths:
                    used.add((symbols[i], symbols[i + 1]))
                    symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
                    merged = True
                    break
    return sorted(used, key=lambda pair: (-pair[0], -pair[1]))


def sentencepiece_to_hf(model_file: str | Path):
    """Build a `PreTrainedTokenizerFast` whose ids equal `sentencepiece`'s plain `encode`."""
    import sentencepiece
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    model_file = Path(model_file)
    _check_supported(model_file)
    sp = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    mergeable = {
        piece: (i, sp.get_score(i)) for i, piece in enumerate(pieces)
        if not (sp.is_control(i) or sp.is_unknown(i) or sp.is_byte(i) or sp.is_unused(i))
    }
    if any(SPACE in piece.lstrip(SPACE) for piece in mergeable):
        raise ValueError(f"{model_file}: a piece has '▁' after another character; pre-splitting would be wrong")

    ranked, run_lengths = [], {1}
    for piece, (piece_id, score) in mergeable.items():
        if len(piece) < 2:
            continue
        if set(piece) == {SPACE}:
            run_lengths.add(len(piece))
            continue
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in mergeable and right in mergeable:
                ranked.append((-score, piece_id, cut, left, right))
    ranked.sort()
    merges = [(left, right) for *_, left, right in ranked]
    merges += [(SPACE * a, SPACE * b) for a, b in _whitespace_run_merges(run_lengths)]

    unk, bos, eos = (sp.id_to_piece(i) for i in (sp.unk_id(), sp.bos_id(), sp.eos_id()))
    backend = Tokenizer(models.BPE(vocab={p: i for i, p in enumerate(pieces)}, merges=merges, unk_token=unk,
                                   byte_fallback=True, fuse_unk=False))
    backend.normalizer = normalizers.Sequence([normalizers.Prepend(SPACE), normalizers.Replace(" ", SPACE)])
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(f"{SPACE}+[^{SPACE}]*|[^{SPACE}]+"), behavior="isolated")
    backend.post_processor = processors.TemplateProcessing(single="$A:0", pair="$A:0 $B:1", special_tokens=[])
    backend.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])

    def special(token: str) -> AddedToken:
        return AddedToken(token, special=True, normalized=False)

    hf = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=special(bos), eos_token=special(eos),
                                 unk_token=special(unk), add_bos_token=False, add_eos_token=False,
                                 clean_up_tokenization_spaces=False)
    assert len(hf) == len(pieces) and hf.eos_token_id == sp.eos_id() and hf.bos_token_id == sp.bos_id()
    return hf


def transformers_conversion(model_file: str | Path):
    """`transformers`' own conversion of the same model (for comparison: it is not exact)."""
    from transformers import LlamaTokenizerFast

    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(model_file, Path(folder) / "tokenizer.model")
        return LlamaTokenizerFast.from_pretrained(folder)
