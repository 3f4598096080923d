"""The run-time bench's programs, written in JAX as their users write them, and helpers."""
