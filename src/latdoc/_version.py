"""The version of latdoc, in one place: the root package, the store's run records, the
OpenTelemetry scope and ``latdoc --version`` read it from here."""

__version__ = "0.1.0"
