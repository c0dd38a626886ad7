"""The rotary (RoPE) cache and apply implementations, one module per backend."""
