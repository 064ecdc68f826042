"""An agent's run diagnosed from its spans (``latdoc diagnose --from-otlp`` on a file that
holds agent and tool spans): where its wall-clock time went, what holds it back, how its
context grew and what the context remedies would save, beside the diagnosis of its model
calls.

- ``analysis``: the run read from its spans (:func:`analyse_agent`), pure;
- ``render``: its JSON, its terminal blocks, and the shown result;
- ``run``: the file read, kept (its span tree in the run's meta) and diagnosed
  (:func:`diagnose_otlp_file`), and a stored run shown again (:func:`shown_instrumented`).
"""

from latdoc.features.agent.analysis import AgentRun, analyse_agent
from latdoc.features.agent.render import ShownAgentDiagnosis, agent_blocks, agent_document
from latdoc.features.agent.run import diagnose_otlp_file, shown_instrumented

__all__ = [
    "AgentRun",
    "ShownAgentDiagnosis",
    "agent_blocks",
    "agent_document",
    "analyse_agent",
    "diagnose_otlp_file",
    "shown_instrumented",
]
