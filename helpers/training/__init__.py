"""Training on the batches: the small Llama models and their presets and the loop (`train`), on one process
or several under torchrun (`distributed`: DDP, FSDP2; `python -m helpers.training`), whole-run checkpoints
that resume exactly (`checkpoints`), the loss of a packed row against separate documents, and the
equivalent Megatron command line."""
