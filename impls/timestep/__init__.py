"""The diffusion timestep embedding implementations, one module per backend."""
