"""`python -m harness check-model DIR`: every positional tensor of a Hugging Face model folder,
its convention, and whether it is the one the config implies.

Reads config.json and the weights (model.safetensors or its shards, or pytorch_model.bin read
with weights_only=True: a pickle that would run code is refused). For each positional tensor
(embed_positions, position_embeddings, pos_embed, wpe, inv_freq...) it prints what identify
finds in it, what the config implies (a 1-D table, a 2-D grid, rotary frequencies, or a learned
table of so many rows) and the verdict: matches, DIFFERS (why, max error), learned, or not
stored (Llama's inv_freq is rebuilt from the config at load). --json prints one object.
Exit 0 when all match or are learned, 1 when one differs, 2 for bad input.
"""

from harness.identify.model.command import check, configure, main

__all__ = ["check", "configure", "main"]
