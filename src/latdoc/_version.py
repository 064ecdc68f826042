"""latdoc's version, in a module of its own so that any module can name it without
importing the root package (which re-exports everything above it)."""

__version__ = "0.1.0"
