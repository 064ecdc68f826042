"""The commands' features, one package each, above the diagnosis core.

- :mod:`latdoc.features.load`: ``latdoc load``, a sweep of concurrency or arrival
  rates, from this process, local processes or Ray actors;
- :mod:`latdoc.features.watch`: ``latdoc watch``, the same requests on a schedule
  across the day;
- :mod:`latdoc.features.export`: ``latdoc export`` and ``latdoc import``, a stored
  run's requests out as rows and back into a store;
- :mod:`latdoc.features.run`: ``latdoc run PLAN.toml``, the steps a plan file lists,
  checked before the first sends and run in order;
- :mod:`latdoc.features.vantage`: ``--vantage``, an endpoint measured from Ray nodes
  in other places;
- :mod:`latdoc.features.verify`: ``latdoc verify``, a remedy measured as an A/B
  experiment, with the conversation and retry experiments in packages of their own.

Each has the same small layers inside, checked by an import contract: ``send`` (what to
send), ``analysis`` (what it means), ``run`` (how it runs and is kept), ``render`` (how
it is shown). A feature reaches the core through the core's packages; the core never
reaches a feature.
"""
