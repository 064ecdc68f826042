"""The remedies of each kind of slow, one module per kind, each with its
:class:`~._builder.RemedyBuilder`; :mod:`latdoc.advice.builders` lists them."""
