"""``latdoc diagnose`` and ``latdoc report``: which kind of slow an endpoint is, with the
evidence and the ranked remedies, kept as a run and diagnosed again from the store.

- ``analysis``: what a diagnosis is made of (:class:`DiagnosisRun`), and the diagnosis
  of recorded traffic;
- ``run``: an endpoint measured, kept and diagnosed (:func:`diagnose_endpoint`), a
  stored run diagnosed again (:func:`rediagnose`), an application's recorded traffic
  (:func:`diagnose_traffic`) and the spans of an OTLP file (:func:`diagnose_otlp`)
  diagnosed, sending nothing;
- ``render``: the plan said before anything is sent, the document, the terminal blocks
  and the page.

The three measured steps and the diagnosis of their samples are the core's
(:func:`latdoc.pipeline.measure_steps`, :func:`latdoc.pipeline.build_diagnosis`), since
a vantage point measures and diagnoses them too.
"""

from latdoc.features.diagnose.analysis import DiagnosisRun, traffic_diagnosis
from latdoc.features.diagnose.render import (
    ShownDiagnosis,
    diagnosis_blocks,
    diagnosis_document,
    diagnosis_page,
    plan_line,
    planned_table,
)
from latdoc.features.diagnose.run import (
    diagnose_endpoint,
    diagnose_otlp,
    diagnose_spans,
    diagnose_traffic,
    rediagnose,
    reference_of_run,
)

__all__ = [
    "DiagnosisRun",
    "ShownDiagnosis",
    "diagnose_endpoint",
    "diagnose_otlp",
    "diagnose_spans",
    "diagnose_traffic",
    "diagnosis_blocks",
    "diagnosis_document",
    "diagnosis_page",
    "plan_line",
    "planned_table",
    "rediagnose",
    "reference_of_run",
    "traffic_diagnosis",
]
