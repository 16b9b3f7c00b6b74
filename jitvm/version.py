"""The package version, in a module of its own: the JIT cache keys on it, below everything."""

__version__ = "0.1.0"
