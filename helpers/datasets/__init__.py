"""Token ids on disk and the samples read from them, in megatron-core's names: the `.bin/.idx` indexed
dataset and its sidecar, the `.npy` and shard formats, the GPT dataset's sample index, blending, and the
one batch layout every reader returns."""
