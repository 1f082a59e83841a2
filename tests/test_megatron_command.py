"""The Megatron-LM command printed by notebooks 06 and 08 trains with our run's global batch, seed and split."""

from __future__ import annotations

import re

import pytest

from helpers.common.errors import UserError
from helpers.training.megatron_command import megatron_pretrain_command
from helpers.training.train import llama_config, train_settings


def flag(command: str, name: str) -> str:
    return re.search(rf"{name} (\S+)", command).group(1)


def test_the_global_batch_is_ours_split_over_the_gpus_and_the_seed_is_the_loaders():
    settings = train_settings("cpu-tiny", batch_size=16)
    command = megatron_pretrain_command(llama_config("cpu-tiny"), settings, ["0.7", "data/a", "0.3", "data/b"],
                                        "95,4,1", "data/tokenizers/bpe-4096-hf", seed=1234, gpus=8)
    assert flag(command, "--global-batch-size") == "16" and flag(command, "--micro-batch-size") == "2"
    assert flag(command, "--seed") == "1234" and flag(command, "--split") == "95,4,1"
    assert flag(command, "--lr") == str(settings.lr) and flag(command, "--train-iters") == str(settings.steps)
    assert "--data-path 0.7 data/a 0.3 data/b" in command


def test_a_global_batch_that_does_not_split_over_the_gpus_is_refused():
    with pytest.raises(UserError, match="multiple of 8"):
        megatron_pretrain_command(llama_config("cpu-tiny"), train_settings("cpu-tiny", batch_size=12), ["p"],
                                  "100,0,0", "tok", seed=0, gpus=8)
