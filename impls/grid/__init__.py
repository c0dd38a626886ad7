"""The 2-D/3-D sincos grid implementations, one module per backend."""
