"""Training on the batches: the small Llama models and their presets, the loss of a packed row against
separate documents, and the equivalent Megatron command line."""
