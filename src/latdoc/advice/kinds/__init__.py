"""The remedies of each kind of slow, one module per kind, each with its
:class:`RemedyBuilder`; :mod:`latdoc.advice.builders` lists them."""

from latdoc.advice.kinds._builder import Build, RemedyBuilder

__all__ = ["Build", "RemedyBuilder"]
